"""`profile_model`: a model file -> Profile. Two counted steps at two batch sizes give every per-op quantity
as fixed + per_sample * batch; on cpu/cuda, timed steps follow.

Linearity: the two runs must run the same ops in the same order (same op, dtype, phase, module, count),
and no fitted quantity may have a clearly negative fixed part (that is the sign of a cost growing faster
than the batch, e.g. a batch x batch similarity matrix). When the check fails the profile says why, and
each op is stored proportional to the batch (forward, backward) or constant (optimizer) at the default size.
"""

from __future__ import annotations

import mmap
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from advisor import __version__
from advisor.profiler.device import catalog_id, check_precision, cpu_name, nvml_info, resolve_device
from advisor.profiler.model_file import ModelFile, call_user
from advisor.profiler.schema import (
    SCHEMA_VERSION,
    ActivationParts,
    Linear,
    Memory,
    ModelSource,
    OpRecord,
    Profile,
    RnnCall,
    Timing,
    now_iso,
)
from advisor.profiler.step import StepResult, run_step
from advisor.profiler.structure import derive_structure

FIELDS = ("flops", "bytes_read", "bytes_written")
NEG_TOLERANCE = 0.01  # a fixed part below -1 % of the value at the first batch size means "not linear"


def _signature(r: StepResult) -> list[tuple]:
    """Per call, what must agree between the two runs: op, dtype, phase, module, category."""
    return [(k[0], k[2], k[3], k[4], k[5], k[7], k[8], k[9]) for k in (r.keys[c[0]] for c in r.calls)]


def _shapes(shapes: tuple) -> str:
    def one(s):
        if s and s[0] == "list":
            return f"{s[1]} tensors ({s[2]} elements)"
        return "[" + ", ".join(map(str, s)) + "]"

    return ", ".join(one(s) for s in shapes)


def _record(key: tuple, count: int, lin: dict[str, Linear]) -> OpRecord:
    name, shapes, dtype, phase, module, category, uncounted, layout, transposed, probability, run = key
    return OpRecord(
        layout=layout or None,
        transposed=transposed or None,
        probability=probability,
        copy_run=run,
        op=name,
        phase=phase,
        category=category,
        dtype=dtype,
        module=module,
        count=count,
        shapes=_shapes(shapes),
        uncounted=uncounted,
        **lin,
    )


def fit(a: StepResult, b: StepResult) -> tuple[list[OpRecord], bool, str | None]:
    """Per-op Linear quantities from runs at two batch sizes (a is the default one).

    Calls are paired one to one in execution order and grouped by their pair of keys, so two calls whose
    shapes coincide at one batch size only (a batch of 4 and a layer of width 4) are still told apart.
    """
    if _signature(a) != _signature(b):
        reason = (
            f"the ops run at batch {a.batch_size} and at batch {b.batch_size} differ "
            "(the model branches on the batch size)"
        )
        return _proportional(a), False, reason
    groups: dict[tuple[int, int], list] = {}
    for ca, cb in zip(a.calls, b.calls, strict=True):
        g = groups.get((ca[0], cb[0]))
        if g is None:
            g = groups[(ca[0], cb[0])] = [0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        g[0] += 1
        g[1] += ca[1]
        g[2] += ca[2]
        g[3] += ca[3]  # noqa: E702
        g[4] += cb[1]
        g[5] += cb[2]
        g[6] += cb[3]  # noqa: E702
    records, reason = [], None
    for (ia, _), g in groups.items():
        key, lin = a.keys[ia], {}
        for i, f in enumerate(FIELDS):
            va, vb = g[1 + i], g[4 + i]
            line = Linear.fit(a.batch_size, va, b.batch_size, vb)
            if line.fixed < -NEG_TOLERANCE * max(va, 1.0) and reason is None:
                reason = f"{key[0]} ({key[3]}, {key[4] or 'top level'}) {f} grows faster than the batch size"
            lin[f] = line
        records.append(_record(key, g[0], lin))
    return records, reason is None, reason


def _proportional(a: StepResult) -> list[OpRecord]:
    sums: dict[int, list] = {}
    for c in a.calls:
        s = sums.setdefault(c[0], [0, 0.0, 0.0, 0.0])
        s[0] += 1
        s[1] += c[1]
        s[2] += c[2]
        s[3] += c[3]  # noqa: E702
    out = []
    for i, s in sums.items():
        key = a.keys[i]
        make = Linear.constant if key[3] == "optimizer" else (lambda v: Linear.proportional(a.batch_size, v))
        out.append(_record(key, s[0], {f: make(s[1 + j]) for j, f in enumerate(FIELDS)}))
    return out


def _mem_fit(a: StepResult, b: StepResult, linear: bool, value: Callable[[StepResult], float]) -> Linear:
    """A memory quantity as a line, never negative at a larger batch: a falling line becomes its larger
    value as a constant, a line with a negative intercept the steeper proportional one."""
    va, vb = value(a), value(b)
    if not linear:
        return Linear.proportional(a.batch_size, va)
    line = Linear.fit(a.batch_size, va, b.batch_size, vb)
    if line.per_sample < 0:
        return Linear.constant(max(va, vb))
    if line.fixed < 0:
        return Linear(fixed=0.0, per_sample=max(va / a.batch_size, vb / b.batch_size))
    return line


def _rnns(a: StepResult, b: StepResult) -> list[RnnCall]:
    """The recurrent layers' calls, identical ones counted together; rows per call as a line in the batch."""

    def grouped(r: StepResult) -> dict[tuple, list[int]]:
        out: dict[tuple, list[int]] = {}
        for module, mode, steps, rows, *dims in r.rnns:
            out.setdefault((module, mode, steps, *dims), []).append(rows)
        return out

    ga, gb = grouped(a), grouped(b)
    records = []
    for key, rows_a in ga.items():
        module, mode, steps, inp, hidden, proj, layers, dirs, dtype = key
        rows_b = gb.get(key, rows_a)
        if b.batch_size != a.batch_size and len(rows_b) == len(rows_a):
            rows = Linear.fit(a.batch_size, rows_a[0], b.batch_size, rows_b[0])
        else:
            rows = Linear.proportional(a.batch_size, rows_a[0])
        records.append(
            RnnCall(
                module=module,
                mode=mode,
                count=len(rows_a),
                steps=steps,
                rows=rows,
                input_size=inp,
                hidden_size=hidden,
                proj_size=proj,
                layers=layers,
                directions=dirs,
                dtype=dtype,
            )
        )
    return records


def saved_parts(r: StepResult, hidden: int | None) -> dict[str, float]:
    """The step's saved tensors summed into the ActivationParts fields (see schema.ActivationParts)."""
    parts = dict.fromkeys(ActivationParts.model_fields, 0.0)
    for (where, _module, width, score), nbytes in r.saved_by.items():
        if where == "before":
            key = "before"
        elif score:
            key = "block_scores" if where == "block" else "after_sharded"
        else:
            key = f"{where}_{'replicated' if width == hidden else 'sharded'}"
        parts[key] += nbytes
    parts["block_inputs"] = float(r.block_input_bytes)
    return parts


def batch_points(batch_size: int) -> tuple[int, int]:
    return batch_size, 2 * batch_size


def time_steps(
    mf, device: str, batch_size: int, precision: str, optimizer: str | None, warmup: int, repeats: int
) -> Timing:
    """Real training steps, without the counter: `warmup` untimed, then the median of `repeats`."""
    import torch

    from advisor.profiler.device import low_dtype, matmul_precision
    from advisor.profiler.step import PhaseClock, build, train_step

    low = low_dtype(precision)
    model, batch, opt, _ = build(mf, device, batch_size, precision, optimizer)
    phases: list[tuple[float, float, float]] = []
    faults: list[int] = []
    count_faults = minor_faults if device == "cpu" else lambda: None
    # one CPU thread: the process's CPU clock, which other processes on a shared machine cannot inflate (as
    # advisor calibrate times); otherwise the wall clock
    clock = PhaseClock(time.process_time if device == "cpu" and torch.get_num_threads() == 1 else time.perf_counter,
                       device)  # fmt: skip
    probe = thread_probe(device)
    before = probe()  # the threads' state around the steps (see parallel_op_s)
    with matmul_precision(precision, device):
        for i in range(warmup + repeats):
            f0 = count_faults()
            train_step(mf, model, batch, opt, device, low, clock)
            if i >= warmup:
                phases.append(clock.phases())
                if f0 is not None:
                    faults.append(count_faults() - f0)
    name = torch.cuda.get_device_name() if device == "cuda" else cpu_name()
    return Timing(
        device_name=name,
        catalog_device=catalog_id(name),
        batch_size=batch_size,
        warmup=warmup,
        repeats=repeats,
        step_time_s=statistics.median(sum(p) for p in phases),
        step_fastest_s=min(sum(p) for p in phases),
        step_slowest_s=max(sum(p) for p in phases),
        forward_s=statistics.median(p[0] for p in phases),
        backward_s=statistics.median(p[1] for p in phases),
        optimizer_s=statistics.median(p[2] for p in phases),
        page_fault_bytes=fault_bytes(faults),
        parallel_op_s=[t for t in (before, probe()) if t is not None] or None,
    )


def replayed_faults(mf, batch_size: int, precision: str, optimizer: str | None) -> tuple[float, dict[str, float]]:
    """(bytes a steady-state training step of a fresh process faults in on this CPU, each phase's share), by
    replaying the tensor allocations of a build and four steps through glibc malloc (`heap`)."""
    from advisor.profiler import heap
    from advisor.profiler.device import low_dtype, matmul_precision
    from advisor.profiler.step import build, train_step

    low = low_dtype(precision)

    def make():
        model, batch, opt, _ = build(mf, "cpu", batch_size, precision, optimizer)
        return lambda: train_step(mf, model, batch, opt, "cpu", low, heap.phase)

    with matmul_precision(precision, "cpu"):
        events, marks = heap.trace(make)
    return heap.steady_faults(events, marks)


def glibc() -> bool:
    """Whether this process allocates through glibc malloc (what `heap` replays)."""
    import platform

    return platform.libc_ver()[0] == "glibc"


def fault_bytes(counts: list[int]) -> float | None:
    """Bytes per step from minor page-fault counts per step: the median count × the page size (None: no counts)."""
    return statistics.median(counts) * mmap.PAGESIZE if counts else None


PARALLEL_PROBE_ELEMENTS = 40_000  # just over torch's parallel grain (32,768 elements): every thread, little work


def parallel_op_s(x=None, calls: int = 200) -> float | None:
    """Median wall seconds of an in-place add on PARALLEL_PROBE_ELEMENTS fp32 values at torch's current CPU
    thread count: little work, mostly the threads' fork and join. None on one thread (no parallel region). On a
    shared VM the same threads can sit in states that last seconds to minutes: the development VM's two showed
    4.5 µs or 6.5-7.2 µs here and nothing between, and in the slower state a GRU's step ran 15-20 % slower and
    a GEMM of its recurrent size 25-50 %, while a 512-cube GEMM barely changed. `x`: the tensor to add into (a
    new one when None); around timed work use thread_probe, which holds one."""
    import torch

    if torch.get_num_threads() < 2:
        return None
    x = torch.zeros(PARALLEL_PROBE_ELEMENTS) if x is None else x
    for _ in range(5):
        x.add_(1.0)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        x.add_(1.0)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def thread_probe(device: str = "cpu") -> Callable[[], float | None]:
    """parallel_op_s on a tensor held for as long as the returned callable lives, for probes before and after
    timed work (glibc maps its 160 KB apart: freeing it between the probes would raise the threshold below which
    malloc hands out heap memory, and so change what the timed steps fault); on a GPU, a callable returning None."""
    if device != "cpu":
        return lambda: None
    import torch

    held = torch.zeros(PARALLEL_PROBE_ELEMENTS)
    return lambda: parallel_op_s(held)


def minor_faults() -> int | None:
    """This process's minor page faults so far (None where getrusage is missing: Windows)."""
    try:
        import resource
    except ImportError:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def profile_model(
    path: str | Path | ModelFile,
    batch_size: int = 8,
    device: str = "meta",
    precision: str = "fp32",
    optimizer: str | None = None,
    name: str | None = None,
    warmup: int = 2,
    repeats: int = 5,
    tick: Callable[[str], None] = lambda s: None,
    faults: bool = True,
) -> Profile:
    """Count (and on a real device, time) one training step of a model: `path` is a model file, anything
    `advisor.profiler.sources.resolve` takes (a shipped name, hf:ID, timm:NAME, torchvision:NAME), or a ModelFile
    resolved already. On a CPU with glibc and `faults`, also the memory a step faults in: counted in fresh processes
    (`faults.measure`), or replayed (`replayed_faults`) for a model that another process cannot rebuild."""
    import torch

    from advisor.errors import UserError

    if batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {batch_size}")
    dev = resolve_device(device)
    check_precision(precision, dev)
    if isinstance(path, ModelFile):
        mf = path
    else:
        from advisor.profiler.sources import resolve

        mf = resolve(path)
    b1, b2 = batch_points(batch_size)
    timing = None
    if dev in ("cpu", "cuda") and repeats > 0:
        # first, in a process that has done nothing else yet, as a user's training script would: after the
        # counting passes glibc's thresholds have grown and a CPU step faults in nothing (a 1D CNN: 0 MB and
        # 35 ms a step timed here, 0-33 MB and 40-52 ms in a fresh process)
        tick("timing")
        timing = call_user(
            lambda: time_steps(mf, dev, batch_size, precision, optimizer, warmup, repeats),
            mf.path,
            "timing training steps",
            batch_size,
            dev,
        )
    if dev == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    tick(f"batch {b1}")
    first = run_step(mf, dev, b1, precision, optimizer, tick)
    measured = float(torch.cuda.max_memory_allocated()) if dev == "cuda" else None
    first.model = first.batch = first.opt = None
    tick(f"batch {b2}")
    try:
        second = run_step(mf, dev, b2, precision, optimizer, tick)
    except UserError as exc:
        if "out of memory" not in exc.message:
            raise
        second = None  # the default batch fits but twice it does not: no fit, proportional records
    if dev == "cuda":
        torch.cuda.empty_cache()
    if second is None:
        ops, linear, reason = _proportional(first), False, f"batch {b2} did not fit on {dev}: not fitted"
        second = first
    else:
        second.model = second.batch = second.opt = None
        ops, linear, reason = fit(first, second)
    notes = list(getattr(mf, "notes", [])) + list(first.notes)
    if dev == "meta":
        notes.append("profiled on meta: attention as the fused GPU kernels; mixed precision per CUDA autocast lists")
    fixed = {
        "parameter_bytes": first.parameter_bytes,
        "gradient_bytes": first.gradient_bytes,
        "optimizer_state_bytes": first.optimizer_state_bytes,
    }
    resident = sum(fixed.values())

    def temporary(r: StepResult) -> float:
        return max(0.0, r.peak_bytes - resident - r.activation_bytes)

    parts = None
    if first.parameter_parts:  # the model has repeated blocks
        split = (saved_parts(first, first.hidden), saved_parts(second, first.hidden))
        parts = ActivationParts(
            **{k: _mem_fit(first, second, linear, lambda r, k=k: split[r is second][k]) for k in split[0]}
        )
    step_faults = fault_shares = None
    if dev == "cpu" and faults and glibc():
        from advisor.profiler.faults import measure

        tick("page faults")
        counted = measure(mf, [b1, b2], precision, optimizer)
        (f1, shares), (f2, _) = counted or (
            call_user(lambda b=b: replayed_faults(mf, b, precision, optimizer), mf.path, "replaying steps", b, dev)
            for b in (b1, b2)
        )
        step_faults = Linear.fit(b1, f1, b2, f2) if linear else Linear.proportional(b1, f1)
        fault_shares = shares or None
    memory = Memory(
        **{k: float(v) for k, v in fixed.items()},
        step_fault_bytes=step_faults,
        step_fault_shares=fault_shares,
        activation_parts=parts,
        activation_bytes=_mem_fit(first, second, linear, lambda r: r.activation_bytes),
        checkpoint_bytes=_mem_fit(first, second, linear, lambda r: r.checkpoint_bytes),
        temporary_peak_bytes=_mem_fit(first, second, linear, temporary),
        peak_bytes=_mem_fit(first, second, linear, lambda r: r.peak_bytes),
        measured_peak_bytes=measured,
        nvml=nvml_info() if dev == "cuda" else None,
    )
    uncounted = sorted({o.op for o in ops if o.uncounted})
    structure = derive_structure(
        ops, batch_size, first.tokens_per_sample, first.hidden, first.parameter_parts, fitted=linear
    )
    return Profile(
        schema_version=SCHEMA_VERSION,
        name=name or getattr(mf, "name", "") or mf.path.stem,
        model_file=getattr(mf, "label", "") or mf.path.name,
        model_sha256=mf.sha256,
        created=now_iso(),
        advisor_version=__version__,
        torch_version=torch.__version__.split("+")[0],
        device=dev,
        precision=precision,
        optimizer=first.optimizer,
        profiled_batch_sizes=[b1, b2],
        batch_size=batch_size,
        input_shapes=first.input_shapes,
        tokens_per_sample=first.tokens_per_sample,
        global_batch=mf.global_batch,
        global_batch_source=mf.global_batch_source,
        linear_in_batch=linear,
        linear_reason=reason,
        parameters=first.parameters,
        trainable_parameters=first.trainable,
        memory=memory,
        ops=ops,
        uncounted_ops=uncounted,
        view_ops=first.view_ops,
        module_calls=first.module_calls,
        rnns=_rnns(first, second),
        timing=timing,
        structure=structure,
        source=getattr(mf, "source", None) or ModelSource(kind="file", id=mf.path.name, config_sha256=mf.sha256),
        notes=notes,
    )
