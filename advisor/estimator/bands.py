"""The expected error of an estimate: a band for its device family and kind of workload, read from the
validation results the benchmarks commit (catalog/accuracy-*.yaml), widened where none covers the device.

    error_band = median |error| of the validation runs of that device family and workload kind

A calibrated device (measured by `advisor calibrate`) takes the band of calibrated devices of its kind at the
calibration's thread count. A family with no band of the workload's kind takes its band over all kinds times
WIDEN (its runs are of other kinds); a family with no validation at all takes the median band of the validated
families (same workload kind where there are some), times WIDEN, at least MIN_UNCOVERED. Both say so. A device
whose own validation runs (a band that applies to its id) were further off than its family's band takes its own,
wider one, and says which way its runs leaned.
"""

from __future__ import annotations

import statistics

from advisor.catalog.schema import AccuracyBand, Catalog, Device, Efficiency
from advisor.estimator.roofline import CONV_OPS, SCATTERS
from advisor.profiler.schema import Profile
from advisor.profiler.structure import SOFTMAX, shapes_of

WIDEN = 1.5  # no validation data for the family (or the kind): the median band of the others, this much wider
MIN_UNCOVERED = 0.25  # and never narrower than this
TAIL = 2.0  # a band's worst run further off than this many bands (and MIN_UNCOVERED) is named beside it
RNN_OPS = ("rnn", "lstm", "gru")
ATTENTION = "attention"


def workload_kind(profile: Profile) -> str:
    """cnn, transformer, rnn, recommender or mlp, from where the profile's work is (at its batch size)."""
    b = profile.batch_size
    flops = profile.flops(b) or 1.0
    nbytes = profile.bytes(b) or 1.0

    def share(pred, of="flops") -> float:
        ops = [o for o in profile.ops if pred(o)]
        if of == "flops":
            return sum(o.flops.at(b) for o in ops) / flops
        return sum(o.bytes_read.at(b) + o.bytes_written.at(b) for o in ops) / nbytes

    recurrent = {r.module for r in profile.rnns}
    rnn = share(lambda o: any(w in o.op for w in RNN_OPS) or o.module in recurrent)
    if rnn > 0.3:
        return "rnn"
    if share(lambda o: o.op in CONV_OPS) > 0.4:
        return "cnn"
    # embedding tables (the gradient a table's backward writes is as large as the table) holding most of the
    # parameters: gathers, scatters and the updates of whole tables dominate
    tables = sum(o.bytes_written.at(b) for o in profile.ops if o.phase == "backward" and o.op in SCATTERS)
    if tables > 0.5 * profile.memory.parameter_bytes:
        return "recommender"
    # attention: a fused kernel, or batched matmuls around a softmax over a square score matrix ([.., s, s]; written
    # out, or einsum). Not any softmax: a loss's log-softmax over [N, classes] beside a graph network's batched
    # matmuls made that a transformer
    scores = share(lambda o: o.op in ("aten.bmm", "aten.baddbmm")) > 0.005 and any(
        o.op in SOFTMAX and (s := shapes_of(o.shapes)) and len(s[0]) >= 3 and s[0][-1] == s[0][-2] for o in profile.ops
    )
    if scores or any(ATTENTION in o.op for o in profile.ops):
        return "transformer"
    return "mlp"


def calibrated(device: Device, eff: Efficiency) -> bool:
    return eff.calibration_threads is not None or device.source.startswith("measured by advisor calibrate")


def _pick(bands: list[AccuracyBand], threads: int | None) -> AccuracyBand | None:
    if not bands:
        return None
    same = [b for b in bands if threads is None or b.threads in (None, threads)]
    return max(same or bands, key=lambda b: b.error_band)


def band_for(
    catalog: Catalog, device: Device, eff: Efficiency, profile: Profile, kind: str | None = None
) -> tuple[float, str]:
    """(error band as a fraction, its basis in words) for an estimate of `profile` on `device`; `kind` is
    the profile's workload kind when the caller knows it already."""
    value, basis = _family_band(catalog, device, eff, profile, kind)
    own = (
        None
        if calibrated(device, eff)
        else _pick([b for b in catalog.accuracy.values() if b.applies_to == device.id], None)
    )
    if own is None or round(own.error_band, 2) <= round(value, 2):  # as shown: whole percent
        return value, basis
    lean = "faster" if own.bias > 0 else "slower"
    return own.error_band, (
        f"±{own.error_band:.0%}: wider than its family's ±{value:.0%}: {own.basis}, {own.as_of}; estimates there "
        f"came out {abs(own.bias):.0%} {lean} than measured on average"
    )


def _tail(band: AccuracyBand) -> str:
    """What a median hides, where it hides much: the worst run when it was more than TAIL times the band (and at
    least MIN_UNCOVERED off), and the runs' mean lean when it was as large as the band itself."""
    if band.max_error <= max(TAIL * band.error_band, MIN_UNCOVERED):
        return ""
    lean = ""
    if abs(band.bias) >= band.error_band:
        lean = f", and they leaned {abs(band.bias):.0%} {'faster' if band.bias > 0 else 'slower'} on average"
    return f"; the worst run was off by {band.max_error:.0%}{lean}"


def _family_band(
    catalog: Catalog, device: Device, eff: Efficiency, profile: Profile, kind: str | None = None
) -> tuple[float, str]:
    kind = kind or workload_kind(profile)
    family = f"calibrated-{device.kind}" if calibrated(device, eff) else eff.id
    threads = eff.calibration_threads
    bands = [b for b in catalog.accuracy.values() if b.applies_to == family]
    band = _pick([b for b in bands if b.workload == kind], threads)
    if band is not None:
        return band.error_band, f"±{band.error_band:.0%}: {band.basis}, {band.as_of}{_tail(band)}"
    band = _pick([b for b in bands if b.workload == "any"], threads)
    if band is not None:
        value = WIDEN * band.error_band
        return value, (
            f"±{value:.0%}: no {kind} runs of its own: {WIDEN:g} x the ±{band.error_band:.0%} of all kinds "
            f"({band.basis}, {band.as_of}){_tail(band)}"
        )
    families = [b for b in catalog.accuracy.values() if b.applies_to not in catalog.devices]
    others = [b for b in families if b.workload == kind] or [b for b in families if b.workload == "any"]
    if not others:
        return 1.0, "no validation results in the catalog (catalog/accuracy-*.yaml): ±100 % assumed"
    typical = statistics.median(b.error_band for b in others)
    value = max(MIN_UNCOVERED, WIDEN * typical)
    what = others[0].workload if others[0].workload != "any" else "all"
    return value, (
        f"±{value:.0%}: no validation runs cover {family}; {WIDEN:g} x the median band ({typical:.0%}) of "
        f"{len(others)} validated device families for {what} workloads"
    )


def band_entry(ident: str, applies_to: str, workload: str, fast_errors: list[float], basis: str, source: str,
               as_of: str, **extra) -> dict:  # fmt: skip
    """One entry of catalog/accuracy-*.yaml (AccuracyBand) from a benchmark's validation errors, signed + where the
    estimate came out faster than measured: the median |error| (the band), the largest, the mean (the lean);
    `extra` fields (threads) follow the workload."""
    magnitudes = [abs(e) for e in fast_errors]
    return {
        "id": ident,
        "applies_to": applies_to,
        "workload": workload,
        **extra,
        "error_band": round(statistics.median(magnitudes), 3),
        "max_error": round(max(magnitudes), 3),
        "bias": round(statistics.mean(fast_errors), 3),
        "rows": len(fast_errors),
        "basis": basis,
        "source": source,
        "as_of": as_of,
    }
