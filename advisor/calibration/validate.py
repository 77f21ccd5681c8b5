"""Measured against predicted: time real training steps of a model on the local device and estimate the
same step on its calibrated catalog entry (local-cpu, local-<gpu>)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from pydantic import BaseModel, Field

from advisor.errors import UserError
from advisor.vocab import PHASES


class Row(BaseModel):
    phase: str  # forward | backward | optimizer | total
    measured_s: float
    predicted_s: float
    error: float  # (predicted - measured) / measured


class Validation(BaseModel):
    model: str
    device: str  # catalog id of the calibrated device
    batch_size: int
    precision: str
    threads: int | None
    rows: list[Row]
    page_fault_bytes: float | None = Field(
        None, description="memory faulted in from the OS per measured step (CPU); None where not measured"
    )
    page_fault_s: float | None = Field(
        None, description="what those faults cost at this machine's measured first-touch rate; not estimated"
    )
    step_spread: float | None = Field(
        None, description="(slowest - fastest) / median of the timed steps: how far this run's own steps scatter"
    )
    runs: int = Field(1, description="fresh processes timed (--runs); the measured figures are their median")
    run_spread: float | None = Field(
        None, description="(slowest - fastest) / median of the runs' measured totals; None for one run"
    )
    parallel_op_s: list[float] | None = Field(
        None,
        description="CPU, more than one thread: a small parallel op (an add on 40,000 floats) timed around the "
        "steps, seconds, each probe of each run; None where not measured",
    )
    calibrated_parallel_op_s: float | None = Field(
        None, description="the same op's median when the device was calibrated; None for older calibrations"
    )
    error_band: float | None = Field(
        None, description="the estimate's expected |error| (a fraction; Estimate.error_band), None where it has none"
    )
    error_basis: str | None = Field(None, description="what the error band rests on")
    notes: list[str] = []


STATE_NOTE = 1.25  # a small parallel op this much slower (or faster) than when calibrated is worth a note


def thread_state(probe: float, calibrated: float) -> str | None:
    """ "slower" or "faster" when a probe of the threads (profile.parallel_op_s) lies STATE_NOTE times the
    calibration's or more above or below it; None for the same state."""
    ratio = probe / calibrated
    return "slower" if ratio >= STATE_NOTE else "faster" if ratio <= 1 / STATE_NOTE else None


def thread_note(probes: list[float] | None, calibrated: float | None) -> str | None:
    """A note when the threads ran in another state than when the device was calibrated: the median of
    `probes` (seconds of profile.parallel_op_s around the timed steps) in another `thread_state`; None otherwise
    or where either is missing."""

    if not probes or not calibrated:
        return None
    median = statistics.median(probes)
    state = thread_state(median, calibrated)
    if state is None:
        return None
    ratio = median / calibrated
    low, high = f"{min(probes) * 1e6:.2g}", f"{max(probes) * 1e6:.2g}"
    seen = f"{low} µs" if low == high else f"{low}-{high} µs"
    side = "above" if state == "slower" else "below"
    effect = f"small ops and small GEMMs run {state} and the measured step comes out {side} the estimate"
    return (
        f"threads: a small parallel op (an add on 40,000 floats) took {seen} around these steps against "
        f"{calibrated * 1e6:.2g} µs when calibrated ({ratio:.2g}x): the CPU's threads were in a {state} state "
        f"than at calibration (a shared VM moves between such states for seconds to minutes); {effect} (on the "
        "development VM by 15-20 % for a GRU's step); run validate again, or calibrate again in this state"
    )


def calibration_note(warnings: list[str]) -> str | None:
    """A note when the calibration the estimate rests on was flagged when measured (Efficiency.calibration_warnings:
    the machine changed speed while it ran), None for a clean one."""
    if not warnings:
        return None
    return (
        f"calibration: flagged when it was measured ({'; '.join(warnings)}): the machine changed speed while it "
        "ran, and this estimate carries that; run `advisor calibrate` again on a quieter machine"
    )


FAULT_NOTE_SHARE = 0.05  # page faults worth a note: 5 % of the measured step or more
SPREAD_NOTE = 0.05  # step scatter worth a note: 5 % of the median step or more


def against(error: float, spread: float) -> str:
    """Where the total's error stands against a scatter of measurements, in words, for the notes."""
    return f"the total's error ({error:+.0%}) is {'inside' if abs(error) <= spread else 'beyond'} that scatter"


def spread_note(timing, error: float) -> tuple[float | None, str | None]:
    """(the timed steps' spread, a note on it where it is SPREAD_NOTE or more), from a profile's Timing; (None,
    None) for a profile that did not record its fastest and slowest step."""
    fast, slow, median = timing.step_fastest_s, timing.step_slowest_s, timing.step_time_s
    if fast is None or slow is None or median <= 0:
        return None, None
    spread = (slow - fast) / median
    if spread < SPREAD_NOTE:
        return spread, None
    return spread, (
        f"the {timing.repeats} timed steps took {fast * 1e3:.3g}-{slow * 1e3:.3g} ms, {spread:.0%} of the median "
        f"apart; {against(error, spread)} (on a shared or busy machine, run it again or with more --repeats before "
        "reading an error that size as the estimate's)"
    )


def band_note(error: float, band: float | None, basis: str | None) -> str | None:
    """Where the total's error stands against the error band the estimate carries (what `advisor estimate` shows
    beside it), for the notes; None without a band."""
    if not band:
        return None
    where = "inside" if abs(error) <= band else "outside"
    return f"band: the total's error ({error:+.0%}) is {where} the estimate's error band ({basis or f'±{band:.0%}'})"


def combine(runs: list[Validation]) -> Validation:
    """One validation from several fresh processes' (`advisor validate --runs N`): each phase's measured time,
    the page faults and the in-process spread are the median over the runs; the prediction is the same in
    every run and is kept; run_spread is how far the runs' totals lie apart, and its note replaces the
    per-run spread notes (a process that faults more or lands on a busier moment moves its whole step); the
    threads' probes of all the runs together decide the thread-state note."""
    first = runs[0]
    if len(runs) == 1:
        return first
    measured = {p: statistics.median(next(r for r in v.rows if r.phase == p).measured_s for v in runs) for p in PHASES}
    predicted = {r.phase: r.predicted_s for r in first.rows}
    compared = rows(measured, predicted)
    totals = [v.rows[-1].measured_s for v in runs]
    middle = statistics.median(totals)
    spread = (max(totals) - min(totals)) / middle if middle > 0 else 0.0

    def median_of(values):
        known = [x for x in values if x is not None]
        return statistics.median(known) if known else None

    notes = [n for n in first.notes if "timed steps took" not in n and not n.startswith(("threads: ", "band: "))]
    band = band_note(compared[-1].error, first.error_band, first.error_basis)
    if band:
        notes.append(band)
    probes = [t for v in runs for t in (v.parallel_op_s or [])] or None
    state = thread_note(probes, first.calibrated_parallel_op_s)
    if state:
        notes.append(state)
    if spread >= SPREAD_NOTE:
        notes.append(
            f"the {len(runs)} runs measured {min(totals) * 1e3:.3g}-{max(totals) * 1e3:.3g} ms a step, {spread:.0%} "
            f"of their median apart; {against(compared[-1].error, spread)}"
        )
    return first.model_copy(
        update={
            "rows": compared,
            "page_fault_bytes": median_of(v.page_fault_bytes for v in runs),
            "page_fault_s": median_of(v.page_fault_s for v in runs),
            "step_spread": median_of(v.step_spread for v in runs),
            "runs": len(runs),
            "run_spread": spread,
            "parallel_op_s": probes,
            "notes": notes,
        }
    )


def first_touch_s_per_byte(size: int = 64 << 20, repeats: int = 7) -> float:
    """Seconds per byte the OS takes to hand out fresh memory and take it back, measured: mapping `size` bytes
    anonymously, filling a tensor over them and unmapping them, less filling a tensor already mapped, the fastest
    of `repeats` rounds of each (another process on a core slows a round, never speeds it: a median of two noisy
    sets can subtract the noise of one from the other). The unmapping counts because a step pays it too: the pages
    it faults in are those a trim of glibc's heap (or the unmapping of a block mapped on its own) handed back,
    inside the step (on the development VM's Xeon the unmap adds about a tenth: 4.3-4.4 GB/s for the fill alone,
    3.9-4.0 with it). The fresh pages come from mmap itself, not from the allocator: a glibc heap that kept a
    large freed block (after profiling a model with big embedding tables) would hand back pages already mapped,
    and the cost would come out 0."""
    import mmap

    import torch

    n = size // 4
    kept = torch.empty(n)
    kept.fill_(0.0)
    fresh, warm = [], []
    private = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)  # as malloc maps (not shmem)
    for _ in range(repeats):
        t0 = time.perf_counter()
        region = mmap.mmap(-1, n * 4, flags=private) if private else None  # Windows: the allocator's pages
        new = torch.frombuffer(region, dtype=torch.float32) if region is not None else torch.empty(n)
        new.fill_(1.0)
        del new
        if region is not None:
            region.close()
        t1 = time.perf_counter()
        kept.fill_(1.0)
        fresh.append(t1 - t0)
        warm.append(time.perf_counter() - t1)
    return max(0.0, (min(fresh) - min(warm)) / size)


def fault_note(fault_bytes: float, fault_s: float, step_s: float, predicted_bytes: float | None = None) -> str:
    """The page-fault note; `predicted_bytes`: what the estimate priced (the profile's count in fresh processes),
    None where it priced none (no count on this system, or a calibration without a first-touch rate)."""
    counted = (
        "which the estimate leaves out"
        if predicted_bytes is None
        else f"of which the estimate counts {predicted_bytes / 1e6:,.0f} MB (the mean step of other fresh "
        "processes, counted as the model was profiled)"
    )
    return (
        f"page faults: {fault_bytes / 1e6:,.0f} MB per step came back from the OS, about "
        f"{fault_s * 1e3:.3g} ms ({fault_s / step_s:.0%} of the measured step), {counted}: "
        "the allocator (glibc malloc) returns freed memory to the OS and the next step faults it in again. "
        "MALLOC_MMAP_THRESHOLD_=4294967295 MALLOC_TRIM_THRESHOLD_=4294967295 in the environment keep it "
        "(both: the trim threshold alone makes it worse), as does a caching allocator (jemalloc, tcmalloc)"
    )


def calibrated_id(catalog, device: str) -> str:
    """The catalog id `advisor calibrate` gives this machine's device; a clear error when there is none."""
    if device == "cpu":
        ident = "local-cpu"
    else:
        import torch

        from advisor.calibration.bench import Measurements
        from advisor.calibration.overlay import device_id

        ident = device_id(Measurements(device="cuda", name=torch.cuda.get_device_name(), threads=1))
    if ident not in catalog.devices:
        raise UserError(
            f"no calibration for this {device.upper() if device == 'cuda' else 'CPU'} ({ident} is not in the catalog)",
            f"run 'advisor calibrate --device {device}' first",
        )
    return ident


def rows(measured: dict[str, float], predicted: dict[str, float]) -> list[Row]:
    out = []
    for phase in (*PHASES, "total"):
        m = measured[phase] if phase != "total" else sum(measured[p] for p in PHASES)
        p = predicted[phase] if phase != "total" else sum(predicted[p] for p in PHASES)
        out.append(Row(phase=phase, measured_s=m, predicted_s=p, error=(p - m) / m if m > 0 else 0.0))
    return out


def validate(
    path,
    device: str = "cpu",
    batch_size: int = 8,
    precision: str = "fp32",
    repeats: int = 7,
    catalog=None,
    hardware: str | None = None,
    tick: Callable[[str], None] = lambda s: None,
) -> Validation:
    """Profile `path` on `device` (counting and timing), estimate it on the calibrated device, compare."""
    import torch

    from advisor import api
    from advisor.profiler.device import resolve_device
    from advisor.profiler.profile import profile_model

    dev = resolve_device(device)
    if dev not in ("cpu", "cuda"):
        raise UserError(f"--device {device}: validate needs a real device (cpu or cuda)")
    catalog = catalog or api.catalog()
    ident = hardware or calibrated_id(catalog, dev)
    prof = profile_model(
        path, batch_size=batch_size, device=dev, precision=precision, warmup=3, repeats=repeats, tick=tick
    )
    est = api.estimate(prof, ident, precision=precision, micro_batch=batch_size, global_batch=batch_size, cat=catalog)
    t = prof.timing
    measured = {"forward": t.forward_s, "backward": t.backward_s, "optimizer": t.optimizer_s}
    predicted = {p: est.phases[p].seconds for p in PHASES}
    eff = catalog.efficiency[catalog.devices[ident].efficiency]
    fault_s, notes = None, []
    if t.page_fault_bytes is not None:
        # the first-touch benchmark (about 0.2 s) only when there is something to price
        fault_s = t.page_fault_bytes * first_touch_s_per_byte() if t.page_fault_bytes > 0 else 0.0
        step = sum(measured.values())
        if step > 0 and fault_s >= FAULT_NOTE_SHARE * step:
            replayed = prof.memory.step_fault_bytes
            counted = max(0.0, replayed.at(batch_size)) if replayed and eff.first_touch_bandwidth else None
            notes.append(fault_note(t.page_fault_bytes, fault_s, step, counted))
    compared = rows(measured, predicted)
    band = band_note(compared[-1].error, est.error_band, est.error_basis)
    if band:
        notes.append(band)
    spread, note = spread_note(t, compared[-1].error)
    if note:
        notes.append(note)
    # the probes compare only at the thread count the calibration ran with (another count: another fork-join)
    same_threads = dev == "cpu" and eff.calibration_threads == torch.get_num_threads()
    calibrated_probe = statistics.median(eff.parallel_op_s) if eff.parallel_op_s and same_threads else None
    state = thread_note(t.parallel_op_s, calibrated_probe)
    if state:
        notes.append(state)
    flagged = calibration_note(eff.calibration_warnings)
    if flagged:
        notes.append(flagged)
    return Validation(
        model=prof.name,
        device=ident,
        batch_size=batch_size,
        precision=precision,
        threads=torch.get_num_threads() if dev == "cpu" else None,
        rows=compared,
        page_fault_bytes=t.page_fault_bytes,
        page_fault_s=fault_s,
        step_spread=spread,
        parallel_op_s=t.parallel_op_s,
        calibrated_parallel_op_s=calibrated_probe,
        error_band=est.error_band,
        error_basis=est.error_basis,
        notes=notes,
    )
