"""Is this calibration trustworthy? The marks a busy machine leaves on one, and the rule for replacing an
earlier calibration.

On a machine shared with other processes, a wall-clock round that loses the CPU for a while comes out slow,
a second thread that has no core to run on makes the many-thread figures no better (or worse) than the
one-thread ones, and the fixed cost per op, fitted as a residual, absorbs every lost time slice. So:

- every measurement runs several rounds; when many of them disagree (slowest / fastest beyond
  NOISY_SPREAD) the run was disturbed;
- the dispatch cost and a reference GEMM are measured at the start and again at the end: they should agree;
- on more than one thread the reference GEMM is also timed on one thread with the process clock, which other
  processes cannot inflate: the many-thread rate must beat it, and the per-op costs must stay within a
  plausible multiple of its quiet dispatch cost;
- the load average before the run says whether other processes wanted the cores.
A run with any of these marks carries `calibration_warnings`; `keep_existing` decides whether it may replace
the calibration already in place.
"""

from __future__ import annotations

import os

from advisor.calibration.bench import NOISY_SPREAD, Measurements

MAX_NOISY_SHARE = 0.2  # more than this share of measurements with a wide spread: a disturbed run
MAX_DRIFT = 0.25  # start and end figures further apart than this (relative)
MIN_THREAD_GAIN = 1.15  # the many-thread GEMM must be at least this much faster than one thread
MAX_OVERHEAD_RATIO = 40.0  # per-op fixed cost above this multiple of the quiet dispatch cost
BUSY_LOAD = 0.5  # load average per core, before the run, above which other processes compete


def load_per_core() -> float | None:
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (OSError, AttributeError):
        return None


def check(m: Measurements, load_before: float | None = None) -> list[str]:
    """Human-readable warnings; empty when nothing looks wrong."""
    out = []
    if load_before is not None and load_before > BUSY_LOAD:
        out.append(
            f"other processes were using the CPU when calibration started (load {load_before:.2f} per core): "
            "figures may be slow"
        )
    wide = [what for what, spread in m.spreads if spread > NOISY_SPREAD]
    if m.spreads and len(wide) > MAX_NOISY_SHARE * len(m.spreads):
        out.append(
            f"{len(wide)} of {len(m.spreads)} measurements varied by more than "
            f"{100 * (NOISY_SPREAD - 1):.0f} % between rounds (e.g. {', '.join(wide[:3])})"
        )
    c = m.checks
    for first, last, what in (
        ("dispatch_first_s", "dispatch_last_s", "the cost of a trivial op"),
        ("matmul_ref_first_s", "matmul_ref_last_s", "a 512x512 GEMM"),
    ):
        a, b = c.get(first), c.get(last)
        if a and b and max(a, b) / min(a, b) > 1 + MAX_DRIFT:
            out.append(f"{what} took {a * 1e6:.3g} µs at the start and {b * 1e6:.3g} µs at the end")
    quiet = c.get("matmul_ref_1thread_s")
    many = min(v for v in (c.get("matmul_ref_first_s"), c.get("matmul_ref_last_s")) if v) if quiet else None
    if quiet and many and quiet / many < MIN_THREAD_GAIN:
        flops = c.get("matmul_ref_flops", 1.0)
        out.append(
            f"the {m.threads}-thread GEMM rate ({flops / many / 1e9:.3g} GFLOP/s) is not above the one-thread "
            f"rate ({flops / quiet / 1e9:.3g} GFLOP/s): the other threads found no free core"
        )
    floor = c.get("dispatch_1thread_s") or m.dispatch_s
    worst = max(m.phase_overhead_s.items(), key=lambda kv: kv[1], default=None)
    if floor and worst and worst[1] > MAX_OVERHEAD_RATIO * floor:
        out.append(
            f"the fixed cost per {worst[0]} op ({worst[1] * 1e6:.3g} µs) is over {MAX_OVERHEAD_RATIO:.0f}x the "
            f"quiet dispatch cost ({floor * 1e6:.3g} µs)"
        )
    if c.get("first_touch_implausible"):
        out.append(
            "fresh memory came out faster than the memory bandwidth in 3 tries (other processes were likely "
            "busy): page faults are not priced; calibrate again on a quieter machine"
        )
    return out


def keep_existing(old: dict | None, new_warnings: list[str], new_threads: int | None) -> str | None:
    """Why an existing calibration (its overlay data) should stay in place of a new one, or None to replace
    it: a clean calibration is never silently replaced by a disturbed one."""
    if not old or not new_warnings:
        return None
    try:
        eff = old["efficiency"][0]
    except (KeyError, IndexError, TypeError):
        return None
    if eff.get("calibration_warnings"):
        return None  # the old one was disturbed too: the newer wins
    made = old.get("devices", [{}])[0].get("as_of", "an earlier date")
    threads = eff.get("calibration_threads")
    same = threads is None or new_threads is None or threads == new_threads
    return f"the calibration in place (from {made}{'' if same else f', {threads} threads'}) showed no such marks"
