"""The fixed costs of eager training, fitted on tiny nets: what a step costs beyond its ops' work.

Each net in `nets/` trains a few dozen steps; per phase, the time the measured curves do not explain (the
phase's time less the roofline work of its ops) is the fixed cost. In the forward pass it has two parts, one
per aten op (dispatch, autograd recording, allocation) and one per nn.Module call (Python); the nets differ
in ops per module call (tiny_rnn runs a hundred ops in C++ from three modules, the others about one op per
module), which separates the two by least squares. Backward and optimizer costs are per op.
These nets are the calibration's tuning set: nothing in benchmarks/ is fitted here.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

NETS_DIR = Path(__file__).resolve().parent / "nets"
BATCH, WARMUP, STEPS = 4, 5, 30


def nonnegative_fit(rows: list[tuple[float, float]], ys: list[float]) -> tuple[float, float]:
    """Least squares y ≈ a·x1 + b·x2 with a, b ≥ 0 (two unknowns: solve, and refit one alone if the other
    comes out negative)."""
    s11 = sum(x1 * x1 for x1, _ in rows)
    s22 = sum(x2 * x2 for _, x2 in rows)
    s12 = sum(x1 * x2 for x1, x2 in rows)
    t1 = sum(x1 * y for (x1, _), y in zip(rows, ys, strict=True))
    t2 = sum(x2 * y for (_, x2), y in zip(rows, ys, strict=True))
    det = s11 * s22 - s12 * s12
    if det > 1e-12 * max(s11 * s22, 1e-30):
        a, b = (t1 * s22 - t2 * s12) / det, (t2 * s11 - t1 * s12) / det
        if a >= 0 and b >= 0:
            return a, b
    a = max(0.0, t1 / s11) if s11 else 0.0
    b = max(0.0, t2 / s22) if s22 else 0.0
    # the better of the two one-term fits
    err_a = sum((y - a * x1) ** 2 for (x1, _), y in zip(rows, ys, strict=True))
    err_b = sum((y - b * x2) ** 2 for (_, x2), y in zip(rows, ys, strict=True))
    return (a, 0.0) if err_a <= err_b else (0.0, b)


def time_phases(path: Path, device: str, threads: int) -> dict[str, float]:
    """Seconds per phase of a training step of the model file: the median over STEPS on the process clock
    (one CPU thread), else the fastest step's phases on the wall clock."""
    from advisor.profiler.model_file import load_model_file
    from advisor.profiler.step import PhaseClock, build, train_step

    process = device != "cuda" and threads == 1
    clock = PhaseClock(time.process_time if process else time.perf_counter, device)
    mf = load_model_file(path)
    model, batch, opt, _ = build(mf, device, BATCH, "fp32", None)
    steps = []
    for i in range(WARMUP + STEPS):
        train_step(mf, model, batch, opt, device, None, clock)
        if i >= WARMUP:
            steps.append(clock.phases())
    phases = ("forward", "backward", "optimizer")
    if process:
        return {p: statistics.median(s[i] for s in steps) for i, p in enumerate(phases)}
    return {p: min(s[i] for s in steps) for i, p in enumerate(phases)}


def fit_overheads(
    data: dict,
    device: str,
    threads: int,
    dispatch_s: float,
    module_s: float | None = None,
    tick: Callable[[str], None] = lambda s: None,
) -> tuple[dict[str, float], float | None, list[dict]]:
    """(fixed cost per op by phase, per module call, what each net showed) from the tiny nets, against the
    overlay `data` (its curves give the ops' work). With `module_s` (measured directly) the module part is
    taken as given and only the per-op cost is fitted."""
    from advisor.calibration.overlay import models
    from advisor.estimator.roofline import profile_op_time, step_bytes
    from advisor.profiler.profile import profile_model

    dev, eff = models(data)
    eff = eff.model_copy(update={"op_overhead_s": 1e-9, "phase_overhead_s": {}, "module_overhead_s": None})
    seen = []
    for path in sorted(NETS_DIR.glob("tiny_*.py")):
        tick(f"overhead ({path.stem})")
        prof = profile_model(path, batch_size=BATCH, device=device, precision="fp32", repeats=0)
        measured = time_phases(path, device, threads)
        row = {"net": path.stem, "modules": prof.module_calls or 0}
        for phase, seconds in measured.items():
            ops = [o for o in prof.ops if o.phase == phase]
            moved = step_bytes(prof, BATCH)
            work = sum(profile_op_time(o, dev, eff, "fp32", "fp32", BATCH, moved).seconds - 1e-9 * o.count for o in ops)
            row[phase] = {"ops": sum(o.count for o in ops), "rest_s": seconds - work, "measured_s": seconds}
        seen.append(row)
    per_op: dict[str, float] = {}
    module = module_s
    if module is None:
        fwd = [r for r in seen if r["forward"]["ops"]]
        per_op["forward"], module = nonnegative_fit(
            [(r["forward"]["ops"], r["modules"]) for r in fwd], [r["forward"]["rest_s"] for r in fwd]
        )
    else:
        for r in seen:
            r["forward"]["rest_s"] -= module * r["modules"]
    for phase in ("forward", "backward", "optimizer"):
        if phase in per_op:
            continue
        rows = [r[phase] for r in seen if r[phase]["ops"]]
        n2 = sum(r["ops"] ** 2 for r in rows)
        per_op[phase] = sum(r["ops"] * r["rest_s"] for r in rows) / n2 if n2 else dispatch_s
    # every op pays at least a dispatch; a fit below it is noise
    per_op = {k: max(v, dispatch_s) for k, v in per_op.items()}
    return per_op, (module or None), seen


def host_per_op(seen: list[dict], dispatch_s: float) -> float:
    """A GPU's host time per eager op, all phases together: the tiny nets' steps are the host issuing their ops
    (their kernels take less), so the time their work does not explain, over their ops (the forward pass's
    module calls taken off already), is what the host spends per op. Never below one dispatch."""
    ops = sum(r[p]["ops"] for r in seen for p in ("forward", "backward", "optimizer"))
    rest = sum(r[p]["rest_s"] for r in seen for p in ("forward", "backward", "optimizer"))
    return max(dispatch_s, rest / ops) if ops else dispatch_s
