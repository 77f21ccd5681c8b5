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
    """Seconds per phase of a training step of the model file: the median over STEPS, on the process clock (one
    CPU thread), else on the wall clock (as `advisor validate` measures a step; bench.Clock)."""
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
    return {p: statistics.median(s[i] for s in steps) for i, p in enumerate(("forward", "backward", "optimizer"))}


def tiny_steps(device: str, threads: int) -> dict[str, dict[str, float]]:
    """{tiny net: its training step's seconds by phase (time_phases)} for every net in NETS_DIR: one sweep's
    timing of the nets (bench.run times them in every sweep; fit_overheads fits their median)."""
    return {path.stem: time_phases(path, device, threads) for path in sorted(NETS_DIR.glob("tiny_*.py"))}


def fit_overheads(
    data: dict,
    device: str,
    threads: int,
    dispatch_s: float,
    module_s: float | None = None,
    tick: Callable[[str], None] = lambda s: None,
    sweeps: list[dict[str, dict[str, float]]] | None = None,
) -> tuple[dict[str, float], float | None, list[dict]]:
    """(fixed cost per op by phase, per module call, what each net showed) from the tiny nets, against the
    overlay `data` (its curves give the ops' work). With `module_s` (measured directly) the module part is
    taken as given and only the per-op cost is fitted. `sweeps` are the nets' steps timed in each of the
    calibration's sweeps (tiny_steps), each phase's median over them fitted; a net none of them timed is timed
    here. One timing of a net is at the mercy of a shared machine's slow spells: on the development VM's EPYC at
    one thread, tiny_rnn's forward pass took 290-340 µs in 21 timings in seven processes and 503 µs in one more,
    and the forward cost per op fitted through one timing of each net came out 3.3, 5.5 and 7.5 µs within 20
    minutes (tiny_rnn's ops weigh most in the fit)."""
    from advisor.calibration.bench import median_of
    from advisor.calibration.overlay import models
    from advisor.estimator.roofline import profile_op_time, step_bytes
    from advisor.profiler.profile import profile_model

    dev, eff = models(data)
    eff = eff.model_copy(update={"op_overhead_s": 1e-9, "phase_overhead_s": {}, "module_overhead_s": None})
    seen = []
    for path in sorted(NETS_DIR.glob("tiny_*.py")):
        tick(f"overhead ({path.stem})")
        prof = profile_model(path, batch_size=BATCH, device=device, precision="fp32", repeats=0)
        timed = [s[path.stem] for s in sweeps or () if path.stem in s]
        measured = median_of(timed) if timed else time_phases(path, device, threads)
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


# The optimizer's cold start (part of Efficiency.optimizer_step): AdamW over COLD_PARAMS tensors of COLD_SIZE
# floats (1 MiB of parameters, gradients and state), and again over tensors of COLD_LARGE floats (64 MiB), after an
# add over three tensors of each of COLD_ELEMENTS floats. On the development VM's EPYC at one thread the small
# optimizer's penalty was 6 us after 0.8 MB, 50 us after 12.6 MB, 126 us after 50 MB and 470-525 us after 100-200 MB
# (its last-level cache is 32 MB), and in training steps 0.43-0.55 ms (a NiN-style CNN with SGD, a 3D CNN, a ResNet
# and a tabular net with AdamW: their optimizer step right after the backward pass against the same step run once
# more). On the Xeon VM (2 MiB of L2 a core, a 480 MiB shared L3) it grows to 0.5 ms after 400 MB and the large
# optimizer's to 1.8 ms after 800 MB; in steps the penalty grew with the optimizer's data (0.2-0.5 ms for 2-3 MB,
# 0.8-1.1 ms for ConvNeXt's 15 MB, 1.3-1.5 ms for a GPT's 68 MB: benchmarks/results/optimizer-in-step.csv).
COLD_ELEMENTS = (1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 23, 1 << 24, 1 << 25, 1 << 26)
COLD_PARAMS, COLD_SIZE, COLD_LARGE, COLD_ROUNDS = 16, 4096, 1 << 18, 15
STEP_TENSORS, STEP_SIZE, STEP_ROUNDS = (16, 64), 16, 30


def optimizer_data_bytes(size: int) -> float:
    """Bytes of parameters, gradients and AdamW's two moments of COLD_PARAMS fp32 tensors of `size` elements."""
    return 16.0 * COLD_PARAMS * size


def optimizer_cold(threads: int, quick: bool = False) -> tuple[list, list]:
    """([bench.Point(bytes an add moved, seconds)] for the small optimizer (COLD_SIZE), the same for the large one
    (COLD_LARGE)): how much longer AdamW's step takes right after the add than straight after another step, the
    median over COLD_ROUNDS pairs (the process clock at one thread, else the wall clock), for each size of
    COLD_ELEMENTS (every other with `quick`). The difference between the two, over the difference in their data,
    is what each byte of a model's optimizer data adds cold (overlay: `ColdPoint.seconds_per_byte`)."""
    import torch

    from advisor.calibration.bench import Point

    clock = time.process_time if threads == 1 else time.perf_counter
    opts = [_adamw(COLD_PARAMS, size) for size in (COLD_SIZE, COLD_LARGE)]
    out: tuple[list, list] = ([], [])
    for n in COLD_ELEMENTS[::2] if quick else COLD_ELEMENTS:
        a, b, c = torch.randn(n), torch.randn(n), torch.empty(n)
        for opt, points in zip(opts, out, strict=True):
            extra = []
            for _ in range(COLD_ROUNDS):
                torch.add(a, b, out=c)
                t0 = clock()
                opt.step()
                t1 = clock()
                opt.step()
                extra.append((t1 - t0) - (clock() - t1))
            points.append(Point(12.0 * n, max(0.0, statistics.median(extra))))
        del a, b, c
    return out


def _adamw(tensors: int, size: int):
    """An AdamW over `tensors` parameters of `size` floats with gradients, three steps in (its state made)."""
    import torch

    params = [torch.nn.Parameter(torch.randn(size)) for _ in range(tensors)]
    for p in params:
        p.grad = torch.randn(size)
    opt = torch.optim.AdamW(params)
    for _ in range(3):
        opt.step()
    return opt


def optimizer_runs() -> list[Callable[[], object]]:
    """The two steps optimizer_overheads splits: AdamW's warm step over STEP_TENSORS[0] and STEP_TENSORS[1]
    tensors of STEP_SIZE floats."""
    return [_adamw(n, STEP_SIZE).step for n in STEP_TENSORS]


def optimizer_overheads(
    data: dict, device: str, threads: int, dispatch_s: float, timed: list[float] | None = None
) -> tuple[float, float]:
    """(fixed cost per op of the optimizer phase, per step) on a CPU, measured directly: AdamW's warm steps
    (`optimizer_runs`), the median seconds of each over the calibration's sweeps (`timed`: `timed_runs` in each
    sweep, their median per step; timed here, STEP_ROUNDS pairs, without them); the difference less its ops' work
    (their curves and floors in the overlay `data`) over the difference in ops is the cost per op, and the smaller
    step less its ops is the cost per step. Timed once, after the sweeps, a slow spell set both: on the development
    VM's EPYC the cost per op came out 2.0-4.8 µs between calibrations, and 2.2-3.8 µs in eight timings a minute
    apart (the cost per step 39-302 µs). The tiny nets' optimizer phases cannot tell the two apart (their steps
    start after backward passes that leave the caches warm, and a per-step cost spreads over their few ops)."""
    runs = optimizer_runs()
    seconds = timed or timed_runs(runs, STEP_ROUNDS, threads)
    ops, work = counted_work(data, runs, "optimizer")
    return split_costs(seconds, ops, work, dispatch_s)


# A recurrent layer run step by step (a GRU on a CPU, which oneDNN does not fuse there) issues about fifteen tiny ops
# a step from C++, with no Python between them: on the development VM's EPYC at one thread, 0.9-1.6 µs each beyond
# their work (nn.GRU and nn.RNN, 8 and 64 wide, 8 against 40 steps), where the tiny nets' fit puts the forward
# pass's cost per op at 3-8 µs; and each call of the layer costs 60-110 µs of Python besides. A bidirectional GRU
# classifier's forward pass (2,902 such ops) came out +80 % from that alone.
LOOP_WIDTH, LOOP_BATCH, LOOP_STEPS, LOOP_ROUNDS = 8, 4, (8, 40), 100


def loop_runs() -> list[Callable[[], object]]:
    """The two calls loop_overheads splits: a GRU LOOP_WIDTH wide over LOOP_BATCH rows, its forward pass (with
    autograd recording, as in training) over LOOP_STEPS[0] and LOOP_STEPS[1] steps, each run once."""
    import torch

    layer = torch.nn.GRU(LOOP_WIDTH, LOOP_WIDTH, batch_first=True)
    runs = [lambda x=torch.randn(LOOP_BATCH, n, LOOP_WIDTH): layer(x) for n in LOOP_STEPS]
    for run in runs:
        run()
    return runs


def loop_overheads(
    data: dict, threads: int, dispatch_s: float, module_s: float | None, timed: list[float] | None = None
) -> tuple[float, float]:
    """(fixed cost per forward op a recurrent layer issues from its C++ loop, per call of the layer) on a CPU,
    measured directly: `loop_runs`, the median seconds of each over the calibration's sweeps (`timed`; timed
    here, LOOP_ROUNDS pairs, without them), split as split_costs does, never below half a dispatch from Python
    (`dispatch_s`: an op issued from C++ skips the binding's share), the call's share less one module call
    (`module_s`, which estimates add for every module)."""
    runs = loop_runs()
    seconds = timed or timed_runs(runs, LOOP_ROUNDS, threads)
    ops, work = counted_work(data, runs, "forward")
    per_op, per_call = split_costs(seconds, ops, work, dispatch_s / 2)
    return per_op, max(0.0, per_call - (module_s or 0.0))


def timed_runs(runs: list[Callable[[], object]], rounds: int, threads: int) -> list[float]:
    """The median seconds of each of `runs`, timed alternately `rounds` times (the process clock at one thread,
    else the wall clock)."""
    clock = time.process_time if threads == 1 else time.perf_counter
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(rounds):
        for i, run in enumerate(runs):
            t0 = clock()
            run()
            times[i].append(clock() - t0)
    return [statistics.median(t) for t in times]


def counted_work(data: dict, runs: list[Callable[[], object]], phase: str) -> tuple[list[int], list[float]]:
    """(ops, work) of each of `runs`: the ops the profiler counts in a run and their work in `phase` by the curves
    and floors of the overlay `data`, without fixed costs. With `timed_runs`' seconds, what split_costs takes."""
    from advisor.calibration.ops import _counted
    from advisor.calibration.overlay import models
    from advisor.estimator.roofline import op_time
    from advisor.profiler.registry import lookup

    dev, eff = models(data)
    eff = eff.model_copy(update={"op_overhead_s": 1e-9, "phase_overhead_s": {}, "module_overhead_s": None})
    ops, work = [], []
    for run in runs:
        calls = _counted(run)
        ops.append(len(calls))
        work.append(
            sum(
                op_time(dev, eff, f, b, 1, (e.category if (e := lookup(name)) else "memory"), "fp32",
                        phase=phase, op=name).seconds - 1e-9
                for name, f, b, _ in calls
            )
        )  # fmt: skip
    return ops, work


def split_costs(seconds: list[float], ops: list[int], work: list[float], dispatch_s: float) -> tuple[float, float]:
    """(cost per op, per step) from two steps' `seconds`, their `ops` and their ops' `work`: the difference beyond
    the work, over the difference in ops (at least a dispatch); the first step less its work and ops (at least 0)."""
    per_op = max(dispatch_s, (seconds[1] - seconds[0] - (work[1] - work[0])) / max(ops[1] - ops[0], 1))
    return per_op, max(0.0, seconds[0] - work[0] - per_op * ops[0])


def host_per_op(seen: list[dict], dispatch_s: float) -> float:
    """A GPU's host time per eager op, all phases together: the tiny nets' steps are the host issuing their ops
    (their kernels take less), so the time their work does not explain, over their ops (the forward pass's
    module calls taken off already), is what the host spends per op. Never below one dispatch."""
    ops = sum(r[p]["ops"] for r in seen for p in ("forward", "backward", "optimizer"))
    rest = sum(r[p]["rest_s"] for r in seen for p in ("forward", "backward", "optimizer"))
    return max(dispatch_s, rest / ops) if ops else dispatch_s
