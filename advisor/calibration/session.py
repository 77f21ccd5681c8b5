"""One calibration from start to finish: measure, fit the fixed costs, check for a busy machine, and write
the overlay without silently replacing a better one. Used by `advisor calibrate` and the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from advisor.calibration.bench import Measurements


def calibrate(
    device: str,
    quick: bool = False,
    tick: Callable[[str], None] = lambda s: None,
    attempts: int = 1,
    sweeps: int | None = None,
    between: Callable[[int], None] | None = None,
) -> tuple[dict, Measurements]:
    """(overlay data, measurements) for the local `device` at torch's current thread count, each size-dependent
    figure the median of `sweeps` (bench.run's default when None), `between(i)` run after sweep i (bench.run, in
    every attempt). A run that looks disturbed (quality.check) is measured again, up to `attempts` runs in all; the
    cleanest (fewest warnings, the earlier of equals) is kept, and its `seconds` count every run (less the time in
    `between`)."""
    start = time.perf_counter()
    best, elsewhere = None, 0.0
    for attempt in range(1, max(1, attempts) + 1):
        data, m = _calibrate_once(device, quick, tick, sweeps, between)
        elsewhere += m.between_s
        if best is None or len(m.warnings) < len(best[1].warnings):
            best = data, m
        if not best[1].warnings:
            break
        if attempt < attempts:
            tick(f"this run looks disturbed ({m.warnings[0]}); measuring again ({attempt + 1} of {attempts})")
            if device == "cpu":
                settle(tick)
    data, m = best
    m.seconds = time.perf_counter() - start - elsewhere
    if attempt > 1:
        data["efficiency"][0]["note"] += f" Measured {attempt} times, the first looking disturbed: the cleanest kept."
    return data, m


SETTLE_S = 90.0  # the longest a CPU retry waits for the load average to fall


def settle(tick: Callable[[str], None], limit_s: float = SETTLE_S, step_s: float = 5.0) -> None:
    """Wait, up to `limit_s`, until the 1-minute load average per core is below quality.BUSY_LOAD: the run just
    made keeps it high for a minute, and the next run's load check would otherwise flag its own predecessor."""
    from advisor.calibration import quality

    waited = 0.0
    while waited < limit_s:
        load = quality.load_per_core()
        if load is None or load <= quality.BUSY_LOAD:
            return
        if waited == 0.0:
            tick(f"waiting for the load average to settle (now {load:.2f} per core)")
        time.sleep(step_s)
        waited += step_s


def _calibrate_once(
    device: str,
    quick: bool,
    tick: Callable[[str], None],
    sweeps: int | None = None,
    between: Callable[[int], None] | None = None,
) -> tuple[dict, Measurements]:
    import torch

    from advisor.calibration import bench, fit, overlay, quality
    from advisor.profiler.device import matmul_precision

    start = time.perf_counter()
    load = quality.load_per_core() if device == "cpu" else None
    # fp32 means fp32: on CUDA cuDNN would otherwise run fp32 convolutions as TF32 (its default). The kernels and
    # the tiny nets are timed on a held heap (bench.held_heap: no page faults, which the estimate prices apart);
    # the tiny nets' steps less their ops' work are the fixed costs, so faults there would land in those
    with matmul_precision("fp32", device), bench.held_heap(device):
        m = bench.run(device, quick=quick, tick=tick, sweeps=sweeps, between=between)
        if not quick:
            per_op, module, seen = fit.fit_overheads(
                overlay.build(m), device, torch.get_num_threads(), m.dispatch_s, m.module_overhead_s, tick, m.tiny_steps
            )
            if device != "cuda":  # the optimizer's costs per op and per step, apart (fit.optimizer_overheads)
                tick("the optimizer's fixed costs")
                per_op["optimizer"], m.optimizer_step_s = fit.optimizer_overheads(
                    overlay.build(m), device, torch.get_num_threads(), m.dispatch_s, m.optimizer_timed
                )
                tick("a recurrent layer's loop")  # its ops are priced apart (fit.loop_overheads)
                m.loop_op_s, m.loop_call_s = fit.loop_overheads(
                    overlay.build(m), torch.get_num_threads(), m.dispatch_s, module, m.loop_timed
                )
            m.phase_overhead_s, m.module_overhead_s = per_op, module
            if device == "cuda":  # the tiny nets' steps are the host issuing ops: a GPU's host time per op
                m.host_op_s = fit.host_per_op(seen, m.dispatch_s)  # (by phase: phase_overhead_s, see overlay)
    m.warnings = quality.check(m, load)
    m.seconds = time.perf_counter() - start - m.between_s
    data = overlay.build(m)
    overlay.models(data)  # validate before anything is written
    return data, m


def rejected_path(path: Path) -> Path:
    """Where a disturbed calibration goes when it may not replace `path`: beside it, under a name no catalog
    folder loads (only *.yaml and *.yml are read), wherever `--output` put it."""
    return path.with_name(path.name + ".rejected")


def save(data: dict, path: Path, force: bool = False) -> tuple[Path, str | None]:
    """Write `data` to `path`, unless a clean calibration is there and this one carries warnings (then to
    `rejected_path`). Returns (where it went, why the old one was kept or None)."""
    from advisor.calibration.quality import keep_existing
    from advisor.errors import UserError
    from advisor.io import dump_yaml, read_yaml, write_atomic

    old = None
    if path.is_file():
        try:
            old = read_yaml(path)
        except UserError:
            old = None  # unreadable: replace it
    eff = data["efficiency"][0]
    reason = None if force else keep_existing(old, eff.get("calibration_warnings", []), eff.get("calibration_threads"))
    target = rejected_path(path) if reason else path
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, "# written by advisor calibrate; rerun it to refresh\n" + dump_yaml(data), "calibration")
    return target, reason
