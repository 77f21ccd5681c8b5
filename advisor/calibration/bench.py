"""Microbenchmarks of the local device in eager PyTorch: matmul by size, shape and dtype, convolutions, memory
traffic by size, the common vector ops by size, and the fixed cost of a dispatch.

Each benchmark returns plain numbers (seconds per call, FLOPs, bytes); `advisor.calibration.overlay` turns
them into a catalog device and efficiency profile, `advisor.calibration.quality` checks them for the marks of
a busy machine. torch is imported inside the functions.
"""

from __future__ import annotations

import ctypes
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from advisor.profiler.heap import DEFAULT_THRESHOLD

MATMUL_SIZES = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
COPY_ELEMENTS = tuple(2**k for k in range(8, 26))  # 1 KiB .. 128 MiB of fp32
# the handoff's adds (handoff_points): from torch's grain size (32,768 elements: smaller ops run on one thread, whose
# own cache holds what it wrote) past the private caches of a few cores
HANDOFF_ELEMENTS = tuple(2**k for k in range(15, 24))  # 128 KiB .. 32 MiB of fp32
VECTOR_ELEMENTS = 1 << 22
# memory-bound ops in turn (in_turn_points): each op's output elements, 4 KiB .. 16 MiB of fp32; a chain of at most
# IN_TURN_OPS ops (a small model's forward pass), shorter where its outputs pass IN_TURN_BYTES (at least 8 ops)
IN_TURN_ELEMENTS = tuple(2**k for k in range(10, 23, 2))
IN_TURN_OPS, IN_TURN_BYTES = 64, 96 << 20
# fresh outputs written in turn (fresh_points): ops of FRESH_ELEMENTS (1 MiB of fp32) each, whose outputs fill
# FRESH_FOOTPRINTS bytes, from a small step's to a large one's (on the project's Xeon VM the rate halved between 32 and
# 128 MiB at one and at two threads; from 128 MiB it did not change with the op's size from 256 KiB to 4 MiB, up to
# 32 MiB it did, 1 MiB the fastest: benchmarks/fresh_output.py)
FRESH_ELEMENTS, FRESH_FOOTPRINTS = 1 << 18, tuple(8 << (20 + 2 * k) for k in range(4))  # 8 .. 512 MiB
# copies between layouts (Efficiency.permuted_copy): runs of contiguous elements both sides share, on tensors of
# about PERMUTED_ELEMENTS floats (1 MB) whose sides lie PERMUTED_OFFSETS off a power of two: on the development VM's
# EPYC a transpose with a power-of-two stride (1,024 x 1,024, and 512 x 512 x 4) took 22-40x a plain copy, as its
# columns map onto few cache sets, where sides 7 below and 3 or 11 above took 6-9x, as real layers' shapes do (an
# MLP-Mixer's [8, 64, 96] made [8, 96, 64]: 5.7x)
PERMUTED_RUNS, PERMUTED_ELEMENTS, PERMUTED_OFFSETS = (1, 4, 16, 64, 256, 4096), 1 << 18, (-7, 3, 11)
COLD_SETS = 512  # at most this many operand pairs per matmul size
# A CPU's size-dependent figures (GEMMs, convolutions, the add by size, fresh pages, the vector ops) are measured in
# this many sweeps, one after another, and each point's median kept: a shared machine drifts over tens of seconds
# (benchmarks/drift.py on the project's VM, two threads, every 4 s for 8 minutes: a 50 MB add 0.47-1.43 ms, tenth to
# ninetieth percentile -38 % / +32 % of the median; a 512 GEMM -1 % / +4 %, once seen up to +55 %), and one sweep
# keeps whatever state the machine was in while it ran.
SWEEPS = 3
DEPTHWISE_KEYS = ("depthwise", "depthwise_backward", "depthwise_small", "depthwise_backward_small")
TRANSPOSED_KEYS = ("transposed", "transposed_backward")
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
HELD_THRESHOLD = 1 << 30  # a block this large or a heap top this large stays the process's: no kernel timed faults
NOISY_SPREAD = 1.25  # rounds of one measurement further apart than this (slowest / fastest) are suspect


@dataclass
class Point:
    size: float  # FLOPs or bytes per call
    seconds: float  # per call, dispatch included


@dataclass
class Measurements:
    device: str  # "cpu" | "cuda"
    name: str
    threads: int
    dispatch_s: float = 0.0  # one trivial op: the floor every op pays
    # the same op called through torch.ops.aten, as the named-op, floor and convolution cases are (about 1 µs more a
    # call on a CPU than the bindings model code uses): the floor taken off those cases (0: not measured, dispatch_s)
    aten_dispatch_s: float = 0.0
    matmul: dict[str, list[Point]] = field(default_factory=dict)  # dtype -> square GEMMs by FLOPs
    skinny: list[tuple[float, float, float]] = field(default_factory=list)  # fp32 GEMMs: (FLOPs, bytes, s)
    # the same GEMMs by layout (kernels.GEMM_LAYOUTS: forward x·Wᵀ, input gradient g·W, weight gradient gᵀ·x); skinny
    # is their mean
    skinny_layouts: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)
    copy: list[Point] = field(default_factory=list)  # by bytes moved (read + written)
    permuted_copy: list[tuple[int, float]] = field(default_factory=list)  # (run, ratio): permuted_copy_points
    vector_flops_s: float = 0.0  # achieved FLOP/s of a large, compute-heavy elementwise op (gelu)
    vector_bytes: float = 0.0
    vector_seconds: float = 0.0
    phase_overhead_s: dict[str, float] = field(default_factory=dict)
    module_overhead_s: float | None = None
    conv: list[tuple[float, float, float]] = field(default_factory=list)  # forward: (FLOPs, bytes, s) per call
    conv_backward: list[tuple[float, float, float]] = field(default_factory=list)
    # CPUs: the same layers at a quarter of the batch, in the same order (kernels.conv_points)
    conv_small: list[tuple[float, float, float]] = field(default_factory=list)
    conv_backward_small: list[tuple[float, float, float]] = field(default_factory=list)
    # depthwise layers (kernels.DEPTHWISE_SHAPES), the same four lists
    depthwise: list[tuple[float, float, float]] = field(default_factory=list)
    depthwise_backward: list[tuple[float, float, float]] = field(default_factory=list)
    depthwise_small: list[tuple[float, float, float]] = field(default_factory=list)
    depthwise_backward_small: list[tuple[float, float, float]] = field(default_factory=list)
    # transposed convolutions (kernels.TRANSPOSED_SHAPES), forward and backward, at their full batch only
    transposed: list[tuple[float, float, float]] = field(default_factory=list)
    transposed_backward: list[tuple[float, float, float]] = field(default_factory=list)
    blocks: list[tuple[int, int, float]] = field(default_factory=list)  # CPUs: kernels.block_points
    # the layers behind conv, conv_backward, depthwise and depthwise_backward, point by point (kernels.geometry)
    conv_geometry: dict[str, list[tuple]] = field(default_factory=dict)
    reorder: list[tuple[int, float, float]] = field(default_factory=list)  # CPUs: kernels.reorder_points
    # CPUs: what the conv lists' times were scaled by, run in turn (kernels.in_turn): set -> direction -> factor
    conv_in_turn: dict[str, dict[str, float]] = field(default_factory=dict)
    ops: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)  # aten op -> (F, B, s)
    windows: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # pooling op -> (F, B, s): ops.windows
    draws: dict[str, float] = field(default_factory=dict)  # draw op -> time at p = 0.5 over its curve's (ops.py)
    floors: dict[str, float] = field(default_factory=dict)  # aten op -> seconds of its smallest call
    launch_s: float | None = None  # GPUs: device time per tiny kernel run back to back (a CUDA graph)
    host_op_s: float | None = None  # GPUs: the host's time to issue one eager op (fitted on the tiny nets)
    first_touch_s_per_byte: float = 0.0  # CPUs: the OS's cost of a fresh page, per byte (0: not measured)
    optimizer_cold: list[Point] = field(default_factory=list)  # CPUs: fit.optimizer_cold, the small optimizer
    optimizer_cold_large: list[Point] = field(default_factory=list)  # CPUs: the same, the large optimizer
    optimizer_step_s: float = 0.0  # CPUs: the optimizer's warm cost per step (fit.optimizer_overheads)
    loop_op_s: float | None = None  # CPUs: per op of a recurrent layer's C++ loop (fit.loop_overheads)
    loop_call_s: float | None = None  # CPUs: per call of that layer, beyond its ops and the module call
    tiny_steps: list[dict[str, dict[str, float]]] = field(default_factory=list)  # each sweep's fit.tiny_steps
    # CPUs: the median over the sweeps of each sweep's seconds of fit.optimizer_runs and fit.loop_runs (timed_runs)
    optimizer_timed: list[float] | None = None
    loop_timed: list[float] | None = None
    parallel_op_s: list[float] = field(default_factory=list)  # CPUs, >1 thread: profile.parallel_op_s probes
    # CPUs, >1 thread: an add by bytes moved whose input was just written at the same thread count, and by one thread
    handoff_matched: list[Point] = field(default_factory=list)
    handoff_cross: list[Point] = field(default_factory=list)
    # CPUs: memory-bound ops by bytes per call, each alone and in a chain as a model runs them (in_turn_points)
    vector_alone: list[Point] = field(default_factory=list)
    vector_turn: list[Point] = field(default_factory=list)
    # CPUs: the time per op of a chain writing fresh outputs, by the bytes its outputs fill (fresh_points)
    fresh: list[Point] = field(default_factory=list)
    # CPUs: linear layers by their output's bytes, as mm and as addmm with a bias (kernels.bias_points)
    bias_mm: list[Point] = field(default_factory=list)
    bias_addmm: list[Point] = field(default_factory=list)
    # CPUs: linear layers' GEMMs by their output's bytes, into one output and into rotating ones (kernels.output_points)
    output_again: list[Point] = field(default_factory=list)
    output_rotating: list[Point] = field(default_factory=list)
    op_efficiency: dict[str, float] = field(default_factory=dict)  # older calibrations: aten op -> efficiency
    spreads: list[tuple[str, float]] = field(default_factory=list)  # (what, slowest / fastest round)
    checks: dict[str, float] = field(default_factory=dict)  # reference figures for quality.py
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0  # how long calibration took, less between_s
    between_s: float = 0.0  # spent in the work run between the sweeps (run's `between`): not the calibration's
    sweeps: int = 1  # how many sweeps each size-dependent figure is the median of

    @property
    def case_dispatch_s(self) -> float:
        """The floor to take off a case timed through torch.ops.aten."""
        return self.aten_dispatch_s or self.dispatch_s


class Clock:
    """Times a callable: rounds of as many calls as fill `min_s`, `repeats` rounds, and reports the median round.
    On one CPU thread it counts the process's CPU time (time slices lost to other processes on a shared machine do
    not count, the work itself, cache misses included, does); otherwise the wall clock. The median, not the fastest
    round, on the wall clock too: an estimate is of the typical step, which `advisor validate` measures as the
    median of its steps, and on a shared VM the fastest round caught a quiet moment the steps mostly do not (until
    2026-12-07 the fastest: two-thread rows of benchmarks/accuracy.py then ran 6-11 % over their estimates by each
    phase's median). Every measurement keeps the spread of its rounds (slowest / fastest) for the quality checks."""

    def __init__(self, device: str, min_s: float, repeats: int, threads: int = 1):
        import torch

        self.cuda = device == "cuda"
        self.sync = torch.cuda.synchronize if self.cuda else (lambda: None)
        self.min_s, self.repeats, self.threads = min_s, repeats, threads
        self.process = not self.cuda and threads == 1
        self.now = time.process_time if self.process else time.perf_counter
        self.spreads: list[tuple[str, float]] = []

    def __call__(self, fn: Callable[[], object], what: str = "", scale: float = 1.0) -> float:
        if self.cuda:
            rounds = self._cuda_rounds(fn)
        else:
            rounds = self._rounds(fn)
        if what:
            self.spreads.append((what, max(rounds) / max(min(rounds), 1e-12)))
        return statistics.median(rounds) * scale

    def _rounds(self, fn) -> list[float]:
        fn()
        self.sync()
        n, elapsed = 1, 0.0
        while True:  # how many calls fill min_s
            t0 = self.now()
            for _ in range(n):
                fn()
            self.sync()
            elapsed = self.now() - t0
            if elapsed >= self.min_s or n >= 1 << 16:
                break
            n = max(n * 2, int(n * self.min_s / max(elapsed, 1e-9)))
        rounds = [elapsed / n]
        for _ in range(self.repeats - 1):
            t0 = self.now()
            for _ in range(n):
                fn()
            self.sync()
            rounds.append((self.now() - t0) / n)
        return rounds

    def _cuda_rounds(self, fn) -> list[float]:
        """CUDA events around each round (the GPU's own clock, launch queue included)."""
        import torch

        fn()
        torch.cuda.synchronize()
        n = 1
        while True:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            rounds = []
            for _ in range(self.repeats):
                start.record()
                for _ in range(n):
                    fn()
                end.record()
                torch.cuda.synchronize()
                rounds.append(start.elapsed_time(end) / 1e3 / n)
            if min(rounds) * n >= self.min_s or n >= 1 << 16:
                return rounds
            n = max(n * 2, int(n * self.min_s / max(min(rounds) * n, 1e-9)))


def alternate(fns: list[Callable[[], object]]) -> Callable[[], object]:
    """One callable that runs `fns` in turn: inputs rotate, as a layer's do from one call to the next."""
    state = [0]

    def call():
        state[0] = (state[0] + 1) % len(fns)
        return fns[state[0]]()

    return call


def memory_points(device: str, clock: Clock, quick: bool) -> list[Point]:
    """An out-of-place elementwise add by bytes moved (two inputs read, one output written), as the ops of
    a training step run: a fresh output per call, the inputs alternating between two sets so that large
    ones come from memory and small ones from the caches."""
    import torch

    elements = COPY_ELEMENTS[::4] if quick else COPY_ELEMENTS
    if device == "cuda" and not quick:
        elements = (*elements, 1 << 27, 1 << 28)
    out = []
    for n in elements:
        pairs = [(torch.randn(n, device=device), torch.randn(n, device=device)) for _ in range(2)]
        fn = alternate([lambda a=a, b=b: torch.add(a, b) for a, b in pairs])
        out.append(Point(12.0 * n, clock(fn, f"add {12 * n / 1e6:.3g} MB")))
    return out


def permuted_copy_points(device: str, clock: Clock, quick: bool) -> list[tuple[int, float]]:
    """[(run, ratio)]: a copy from a view that swaps the two outer dimensions of a [side, side, run] tensor of
    about PERMUTED_ELEMENTS floats (a sixteenth with `quick`), so that source and destination share runs of `run`
    contiguous elements, over a plain copy of the same tensor: the median over sides PERMUTED_OFFSETS off the
    power of two, for each of PERMUTED_RUNS (every other with `quick`). What a transposed or permuted tensor made
    contiguous costs (kernels.copy_factor)."""
    import math

    import torch

    total = PERMUTED_ELEMENTS >> 4 if quick else PERMUTED_ELEMENTS
    out = []
    for run in PERMUTED_RUNS[::2] if quick else PERMUTED_RUNS:
        ratios = []
        for offset in PERMUTED_OFFSETS:
            side = max(2, math.isqrt(total // run) + offset)
            src = torch.randn(side, side, run, device=device)
            view, dst = src.transpose(0, 1), torch.empty(side, side, run, device=device)
            plain = clock(lambda src=src, dst=dst: dst.copy_(src), f"copy {side}x{side}x{run}")
            permuted = clock(lambda view=view, dst=dst: dst.copy_(view), f"permuted copy {side}x{side}x{run}")
            ratios.append(permuted / max(plain, 1e-12))
        out.append((run, statistics.median(ratios)))
    return out


def handoff_points(quick: bool, reps: int = 60) -> tuple[list[Point], list[Point]]:
    """CPUs at more than one thread: an out-of-place add by bytes moved (as memory_points), its input written just
    before each call by a multiply at the same thread count (each thread's share of the add is the share it wrote,
    in its own core's cache: what memory_points and the op sweeps measure, an op called on the same tensors again)
    and by a multiply on one thread (the other threads' shares sit in another core's cache, modified). In a
    training step an op reads what a different op wrote, and a convolution or GEMM splits its output between the
    threads otherwise than the elementwise op after it splits its input. The median of `reps` calls each, timed
    alone on the wall clock. (matched, cross) Points."""
    import torch

    threads = torch.get_num_threads()
    matched, cross = [], []
    for n in HANDOFF_ELEMENTS[::3] if quick else HANDOFF_ELEMENTS:
        z, x, y = torch.randn(n), torch.empty(n), torch.randn(n)
        times: dict[int, list[float]] = {threads: [], 1: []}
        try:
            for k in range(5 + (max(reps // 6, 2) if quick else reps)):
                for producer in (threads, 1):  # the two cases in turn, so a slow stretch of the machine hits both
                    torch.set_num_threads(producer)
                    torch.mul(z, 1.0001, out=x)
                    torch.set_num_threads(threads)
                    t0 = time.perf_counter()
                    torch.add(x, y)
                    if k >= 5:
                        times[producer].append(time.perf_counter() - t0)
        finally:
            torch.set_num_threads(threads)
        matched.append(Point(12.0 * n, statistics.median(times[threads])))
        cross.append(Point(12.0 * n, statistics.median(times[1])))
    return matched, cross


def in_turn_points(device: str, clock: Clock, quick: bool) -> tuple[list[Point], list[Point]]:
    """CPUs: memory-bound ops (a multiply by a scalar, an add, GELU, softmax over rows of 256) by bytes per call
    (read + written: 8 an element), seconds per op (alone, in turn). Alone, each op is called again and again on two
    alternating inputs, as ops.measure times the op curves: its output lands where the last call's freed one was,
    in the cache. In turn, a chain of the four over and over (up to IN_TURN_OPS, fewer where their outputs pass
    IN_TURN_BYTES) reads what the op before wrote and keeps its own output, as a forward pass keeps its activations
    for the backward pass, so every output lands in memory no recent call touched; the chain's time over its ops.
    On the project's Xeon VM a chain ran 1.2-1.6x the sum of its ops alone from 64 KB to 16 MB a call, at one
    thread and at two (estimator: Efficiency.vector_in_turn)."""
    import torch
    import torch.nn.functional as F

    kinds = (lambda z: z * 1.5, lambda z: z + z, F.gelu, lambda z: z.softmax(-1))
    alone, turn = [], []
    for n in IN_TURN_ELEMENTS[::3] if quick else IN_TURN_ELEMENTS:
        shape = (max(1, n // 256), min(n, 256))
        count = max(8, min(IN_TURN_OPS, IN_TURN_BYTES // (4 * n)))
        sets = [torch.randn(*shape, device=device) for _ in range(2)]
        each = [clock(alternate([lambda t=t, f=f: f(t) for t in sets]), f"vector op {k} alone, {n} elements")
                for k, f in enumerate(kinds)]  # fmt: skip

        def chain(x=sets[0], count=count):
            outs = [x]
            for i in range(count):
                outs.append(kinds[i % len(kinds)](outs[-1]))
            return outs

        alone.append(Point(8.0 * n, sum(each[i % len(kinds)] for i in range(count)) / count))
        turn.append(Point(8.0 * n, clock(chain, f"{count} vector ops in turn, {n} elements") / count))
    return alone, turn


def fresh_points(device: str, clock: Clock, quick: bool) -> list[Point]:
    """CPUs: the rate at which a step's ops write fresh outputs, by the bytes the step touches: Points of (footprint,
    seconds per op) for each of FRESH_FOOTPRINTS (the first and last with `quick`). A chain of the fastest
    memory-bound ops (a multiply by a scalar, a tensor added to itself) of FRESH_ELEMENTS each, each reading what the
    one before wrote and writing into a buffer of its own, as a forward pass keeps its activations, the buffers
    filling the footprint: every output lands in memory last written a footprint ago. The buffers are allocated once,
    outside the timing (fresh pages are priced apart, Efficiency.first_touch_bandwidth). On the project's Xeon VM
    at two threads 34-36 GB/s up to 32 MiB, 14-18 GB/s from 128 MiB; 1 MB alone, 24 µs: 44 GB/s (estimator:
    Efficiency.fresh_output, roofline.fresh_output_s)."""
    import torch

    kinds = (lambda z, out: torch.mul(z, 1.5, out=out), lambda z, out: torch.add(z, z, out=out))
    shape = (FRESH_ELEMENTS // 256, 256)
    x = torch.randn(*shape, device=device)
    out = []
    for footprint in FRESH_FOOTPRINTS[::3] if quick else FRESH_FOOTPRINTS:
        buffers = [torch.empty(*shape, device=device) for _ in range(footprint // (4 * FRESH_ELEMENTS))]

        def chain(x=x, buffers=buffers):
            for i, buffer in enumerate(buffers):
                x = kinds[i % 2](x, buffer)
            return x

        out.append(Point(float(footprint), clock(chain, f"fresh outputs over {footprint >> 20} MiB") / len(buffers)))
        del buffers
    return out


def plausible_first_touch(measure: Callable[[], float], copy: list[Point], tries: int = 3) -> tuple[float, bool]:
    """(the first-touch cost per byte, whether it was plausible), measured up to `tries` times until it is
    physically possible: the kernel zeroes a fresh page before the program writes it, so fresh memory cannot be
    handed out faster than the fastest out-of-place add measured moves bytes. (0, False) when no try is; a
    measured 0 (an allocator that keeps its memory) is plausible."""
    fastest = max((p.size / p.seconds for p in copy if p.seconds > 0), default=0.0)
    for _ in range(tries):
        s_per_byte = measure()
        if s_per_byte <= 0 or not fastest or 1.0 / s_per_byte <= fastest:
            return s_per_byte, True
    return 0.0, False


def median_of(sweeps: list):
    """The sweeps of one measurement, each point's time replaced by its median over them. Times are floats, a
    Point's seconds, or the third field of a (FLOPs, bytes, seconds, ...) tuple; lists and dicts are merged by
    position and key, from the sweeps that measured the same number of points there as the first did. A CPU's
    (first-touch seconds per byte, plausible) is the median of the plausible sweeps' figures, (0, False) when none
    was. None stays None."""
    first = sweeps[0]
    if first is None or isinstance(first, (int, float)):
        values = [v for v in sweeps if v is not None]
        return statistics.median(values) if first is not None else None
    if isinstance(first, Point):
        return Point(first.size, statistics.median(p.seconds for p in sweeps))
    if isinstance(first, tuple) and len(first) == 2 and isinstance(first[1], bool):
        good = [s for s, plausible in sweeps if plausible]
        return (statistics.median(good), True) if good else (0.0, False)
    if isinstance(first, tuple) and len(first) >= 3 and all(isinstance(v, (int, float)) for v in first):
        return (*first[:2], statistics.median(p[2] for p in sweeps), *first[3:])
    if isinstance(first, (tuple, list)):
        same = [s for s in sweeps if len(s) == len(first)]
        merged = [median_of(list(points)) for points in zip(*same, strict=True)]
        return tuple(merged) if isinstance(first, tuple) else merged
    if isinstance(first, dict):
        return {key: median_of([s[key] for s in sweeps if key in s]) for key in first}
    raise TypeError(f"cannot merge sweeps of {type(first).__name__}")


def module_call(device: str, clock: Clock) -> float:
    """Seconds an nn.Module call adds to the op it runs (its __call__ and hook machinery, in Python)."""
    import torch

    class Relu(torch.nn.Module):
        def forward(self, t):
            return torch.relu(t)

    small, module = torch.randn(16, device=device), Relu()
    return max(0.0, clock(lambda: module(small), "module call") - clock(lambda: torch.relu(small), "relu call"))


def _sweep(device: str, clock: Clock, quick: bool, tick: Callable[[str], None]) -> dict:
    """One sweep of every size-dependent measurement, by the name of the Measurements field it fills (gelu_s: the
    elementwise reference's seconds; first_touch: a CPU's (seconds per byte, plausible), None on a GPU)."""
    import torch

    from advisor.calibration import kernels, ops
    from advisor.profiler.device import matmul_precision

    cuda = device == "cuda"
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    if cuda:  # tf32: fp32 operands on the tensor cores, as --precision tf32 runs them
        dtypes.update(fp16=torch.float16, tf32=torch.float32)
    matmul = {}
    for label, dt in dtypes.items():
        tick(f"matmul {label}")
        with matmul_precision(label, device):
            matmul[label] = kernels.square_points(device, dt, clock, quick)
    tick("matmul shapes")
    skinny = kernels.skinny_points(device, clock, quick)
    tick("convolutions")
    conv, conv_backward, conv_small, conv_backward_small, *conv_geo, conv_turn = kernels.conv_points(
        device, clock, quick
    )
    *depthwise, dw_geo, dw_bwd_geo, dw_turn = kernels.conv_points(device, clock, quick, depthwise=True)
    transposed = kernels.conv_points(device, clock, quick, transposed=True)
    blocks = [] if cuda else kernels.block_points(device, clock, quick)
    reorder = [] if cuda else kernels.reorder_points(device, clock, quick)
    smallest = kernels.floors(device, clock)
    launch_s = None
    if cuda:
        tick("kernels back to back")
        try:
            launch_s = kernels.kernel_s(device, clock)
        except RuntimeError as exc:  # no graph capture on this driver: each op's floor is the dispatch instead
            tick(f"no CUDA graph ({exc}): the dispatch is each kernel's floor")
    tick("memory bandwidth")
    copy = memory_points(device, clock, quick)
    tick("copies between layouts")
    permuted = permuted_copy_points(device, clock, quick)
    touch = None
    if not cuda:
        from advisor.calibration.validate import first_touch_s_per_byte

        tick("fresh pages")
        touch = plausible_first_touch(first_touch_s_per_byte, copy)
    cold: tuple[list, list] = ([], [])
    if not cuda:
        from advisor.calibration.fit import optimizer_cold

        tick("the optimizer after a full cache")
        cold = optimizer_cold(clock.threads, quick)
    vector_turn, bias, fresh, outputs = ([], []), ([], []), [], ([], [])
    if not cuda:
        tick("vector ops in turn")
        vector_turn = in_turn_points(device, clock, quick)
        tick("fresh outputs in turn")
        fresh = fresh_points(device, clock, quick)
        tick("GEMMs with a bias")
        bias = kernels.bias_points(device, clock, quick)
        tick("GEMMs writing cold outputs")
        outputs = kernels.output_points(device, clock, quick)
    handoff = ([], [])
    if not cuda and clock.threads > 1:
        tick("handoff between threads")
        handoff = handoff_points(quick)
    steps = {}
    if not quick:  # the tiny nets' steps, for the fixed costs (fit.fit_overheads): in every sweep, as the rest
        from advisor.calibration.fit import tiny_steps

        tick("tiny nets")
        steps = tiny_steps(device, clock.threads)
    optimizer_timed = loop_timed = None
    if not quick and not cuda:  # the optimizer's and a recurrent loop's fixed costs (fit.optimizer_overheads)
        from advisor.calibration import fit

        tick("the optimizer's and a recurrent loop's fixed costs")
        optimizer_timed = fit.timed_runs(fit.optimizer_runs(), fit.STEP_ROUNDS, clock.threads)
        loop_timed = fit.timed_runs(fit.loop_runs(), fit.LOOP_ROUNDS, clock.threads)
    tick("elementwise")
    x = torch.randn(VECTOR_ELEMENTS >> 4 if quick else VECTOR_ELEMENTS, device=device)
    out = torch.empty_like(x)
    gelu_s = clock(lambda: torch.ops.aten.gelu.out(x, out=out), "gelu")
    tick("vector ops by size")
    min_s, repeats = clock.min_s, clock.repeats
    quick_clock = Clock(device, min_s / 2, max(2, repeats - 2), clock.threads)  # many small cases: shorter rounds
    quick_clock.spreads = clock.spreads
    return {
        "matmul": matmul,
        "skinny_layouts": skinny,
        "conv": conv,
        "conv_backward": conv_backward,
        "conv_small": conv_small,
        "conv_backward_small": conv_backward_small,
        **dict(zip(DEPTHWISE_KEYS, depthwise, strict=True)),
        **dict(zip(TRANSPOSED_KEYS, transposed[:2], strict=True)),  # one batch: no quarter-batch lists
        "blocks": blocks,
        "conv_geometry": {
            "conv": conv_geo[0],
            "conv_backward": conv_geo[1],
            "depthwise": dw_geo,
            "depthwise_backward": dw_bwd_geo,
        },
        "reorder": reorder,
        "conv_in_turn": {"conv": conv_turn, "depthwise": dw_turn, "transposed": transposed[-1]},
        "floors": smallest,
        "launch_s": launch_s,
        "copy": copy,
        "permuted_copy": permuted,
        "gelu_s": gelu_s,
        "ops": ops.measure(device, quick_clock, quick, tick),
        "windows": ops.windows(device, quick_clock),
        "draws": ops.draw_ratios(device, quick_clock),
        "optimizer_cold": cold[0],
        "optimizer_cold_large": cold[1],
        "first_touch": touch,
        "handoff": handoff,
        "vector_turn": vector_turn,
        "fresh": fresh,
        "bias": bias,
        "outputs": outputs,
        "tiny_steps": steps,
        "optimizer_timed": optimizer_timed,
        "loop_timed": loop_timed,
    }


@contextmanager
def held_heap(device: str) -> Iterator[bool]:
    """On a CPU with glibc, malloc keeps what it is given back while the calibration times kernels and tiny nets:
    no block is mapped on its own, no heap top trimmed, so no timing holds page faults (yields whether it could).
    The estimate prices a step's faults apart (counted in fresh processes as the model is profiled, at the
    measured first-touch rate), so faults inside the kernels' times would count them twice, and at random: on the
    development VM's Xeon a 1x1 convolution (32 channels, 32x32, batch 16, one thread) took 3.3 ms on one set of
    tensors and 0.94 on the next, the slow sets with 10,500 minor faults each, and 0.90-0.98 ms on every set held.
    The first-touch rate is measured on memory mapped directly, which this leaves alone. Afterwards both
    thresholds are glibc's defaults again; glibc's raising of the mmap threshold as large blocks are freed stays
    off in this process (mallopt turns it off for good)."""
    libc = None
    if device == "cpu" and sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None)  # the process's own symbols: glibc's mallopt (musl's returns 0: nothing held)
    if libc is None or not hasattr(libc, "mallopt"):
        yield False
        return
    held = bool(libc.mallopt(M_MMAP_THRESHOLD, HELD_THRESHOLD)) and bool(libc.mallopt(M_TRIM_THRESHOLD, HELD_THRESHOLD))
    try:
        yield held
    finally:
        libc.mallopt(M_MMAP_THRESHOLD, DEFAULT_THRESHOLD)  # glibc's defaults, as a fresh process starts
        libc.mallopt(M_TRIM_THRESHOLD, DEFAULT_THRESHOLD)
        if hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)  # what the calibration held goes back to the OS


def run(
    device: str,
    quick: bool = False,
    tick: Callable[[str], None] = lambda s: None,
    sweeps: int | None = None,
    between: Callable[[int], None] | None = None,
) -> Measurements:
    """Every microbenchmark on `device` ('cpu' or 'cuda'). `quick` trims sizes and time (tests). The size-dependent
    ones are measured in `sweeps` sweeps, each point's median kept (default: SWEEPS on a CPU, one on a GPU or
    with `quick`). `between(i)`, when given, runs after sweep i (from 0; after the last too, before the closing
    reference figures): what else should see the same stretch of a shared machine's time as the sweeps, a wait
    (`advisor calibrate --spread`) or the benchmark's rounds of timed steps; its time is kept apart (between_s)."""
    import torch

    from advisor.calibration import kernels
    from advisor.profiler.device import cpu_name
    from advisor.profiler.profile import thread_probe

    start = time.perf_counter()
    cuda = device == "cuda"
    threads = torch.get_num_threads()
    min_s, repeats = (0.002, 2) if quick else (0.02, 5)
    clock = Clock(device, min_s, repeats, threads)
    name = torch.cuda.get_device_name() if cuda else cpu_name()
    m = Measurements(device=device, name=name, threads=threads)
    one = torch.ones(1, device=device)
    m.dispatch_s = clock(lambda: torch.add(one, one), "dispatch")
    m.aten_dispatch_s = clock(lambda: torch.ops.aten.add.Tensor(one, one), "dispatch through torch.ops.aten")
    m.checks["dispatch_first_s"] = m.dispatch_s
    m.module_overhead_s = module_call(device, clock)
    m.checks["matmul_ref_first_s"] = kernels.reference_matmul(device, clock)
    if not cuda and threads > 1:
        # the same two figures on one thread and the process clock, which other processes cannot inflate:
        # the quiet figures the many-thread ones are checked against
        torch.set_num_threads(1)
        try:
            one_thread = Clock(device, min_s, repeats, 1)
            m.checks["dispatch_1thread_s"] = one_thread(lambda: torch.add(one, one))
            m.checks["matmul_ref_1thread_s"] = kernels.reference_matmul(device, one_thread)
        finally:
            torch.set_num_threads(threads)

    sweeps = sweeps or (1 if quick or cuda else SWEEPS)
    m.sweeps = sweeps
    probe = thread_probe(device)
    results = []
    for i in range(sweeps):
        m.parallel_op_s.append(probe())  # the threads' state before each sweep, and after the last
        of = f" (sweep {i + 1} of {sweeps})" if sweeps > 1 else ""
        results.append(_sweep(device, clock, quick, lambda what, of=of: tick(what + of)))
        if between is not None:
            t0 = time.perf_counter()
            between(i)
            m.between_s += time.perf_counter() - t0
    m.parallel_op_s = [t for t in (*m.parallel_op_s, probe()) if t is not None]
    m.tiny_steps = [steps for r in results if (steps := r.pop("tiny_steps", None))]  # fitted apart (fit_overheads)
    merged = median_of(results)
    merged_keys = ("matmul", "skinny_layouts", "conv", "conv_backward", "conv_small", "conv_backward_small", "blocks")
    merged_keys += ("conv_geometry", "reorder", "conv_in_turn")
    merged_keys += DEPTHWISE_KEYS + TRANSPOSED_KEYS
    merged_keys += ("floors", "launch_s", "copy", "permuted_copy", "ops", "windows", "draws", "optimizer_cold")
    merged_keys += ("optimizer_cold_large",)
    for key in (*merged_keys, "optimizer_timed", "loop_timed"):
        setattr(m, key, merged[key])
    m.skinny = kernels.layouts_mean(m.skinny_layouts)
    m.handoff_matched, m.handoff_cross = merged["handoff"]
    m.vector_alone, m.vector_turn = merged["vector_turn"]
    m.fresh = merged["fresh"]
    m.bias_mm, m.bias_addmm = merged["bias"]
    m.output_again, m.output_rotating = merged["outputs"]
    n = VECTOR_ELEMENTS >> 4 if quick else VECTOR_ELEMENTS
    m.vector_seconds, m.vector_bytes = merged["gelu_s"], 8.0 * n
    # the profiler counts gelu as 5 FLOPs an element
    m.vector_flops_s = 5.0 * n / max(m.vector_seconds - m.case_dispatch_s, 1e-9)
    if not cuda:
        m.first_touch_s_per_byte, plausible = merged["first_touch"]
        if not plausible:
            m.checks["first_touch_implausible"] = 1.0
    # the same reference figures once more at the end: a busy machine shows as a change between the two
    m.checks["dispatch_last_s"] = clock(lambda: torch.add(one, one), "dispatch again")
    ref = kernels.reference_matmul(device, clock)
    m.checks["matmul_ref_last_s"] = ref
    m.checks["matmul_ref_flops"] = kernels.REFERENCE_FLOPS
    m.spreads = list(clock.spreads)
    m.seconds = time.perf_counter() - start - m.between_s
    return m
