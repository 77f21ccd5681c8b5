"""Microbenchmarks of the local device in eager PyTorch: matmul by size, shape and dtype, convolutions, memory
traffic by size, the common vector ops by size, and the fixed cost of a dispatch.

Each benchmark returns plain numbers (seconds per call, FLOPs, bytes); `advisor.calibration.overlay` turns
them into a catalog device and efficiency profile, `advisor.calibration.quality` checks them for the marks of
a busy machine. torch is imported inside the functions.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MATMUL_SIZES = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
COPY_ELEMENTS = tuple(2**k for k in range(8, 26))  # 1 KiB .. 128 MiB of fp32
VECTOR_ELEMENTS = 1 << 22
COLD_SETS = 512  # at most this many operand pairs per matmul size
# A CPU's memory-bound figures (the add by size, fresh pages, the vector ops) are measured this many times, one
# sweep after another, and each point's median kept: a shared machine's memory bandwidth drifts over tens of
# seconds (a 50 MB add at two threads, fastest of five rounds, every 4 s for 8 minutes: 0.80-1.92 ms, tenth to
# ninetieth percentile -23 % / +28 % of the median), while its GEMMs and convolutions held within -2 % / +13 %.
MEMORY_PASSES = 3
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
    matmul: dict[str, list[Point]] = field(default_factory=dict)  # dtype -> square GEMMs by FLOPs
    skinny: list[tuple[float, float, float]] = field(default_factory=list)  # fp32 GEMMs: (FLOPs, bytes, s)
    copy: list[Point] = field(default_factory=list)  # by bytes moved (read + written)
    vector_flops_s: float = 0.0  # achieved FLOP/s of a large, compute-heavy elementwise op (gelu)
    vector_bytes: float = 0.0
    vector_seconds: float = 0.0
    phase_overhead_s: dict[str, float] = field(default_factory=dict)
    module_overhead_s: float | None = None
    conv: list[tuple[float, float, float]] = field(default_factory=list)  # forward: (FLOPs, bytes, s) per call
    conv_backward: list[tuple[float, float, float]] = field(default_factory=list)
    ops: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)  # aten op -> (F, B, s)
    floors: dict[str, float] = field(default_factory=dict)  # aten op -> seconds of its smallest call
    launch_s: float | None = None  # GPUs: device time per tiny kernel run back to back (a CUDA graph)
    host_op_s: float | None = None  # GPUs: the host's time to issue one eager op (fitted on the tiny nets)
    first_touch_s_per_byte: float = 0.0  # CPUs: the OS's cost of a fresh page, per byte (0: not measured)
    op_efficiency: dict[str, float] = field(default_factory=dict)  # older calibrations: aten op -> efficiency
    spreads: list[tuple[str, float]] = field(default_factory=list)  # (what, slowest / fastest round)
    checks: dict[str, float] = field(default_factory=dict)  # reference figures for quality.py
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0  # how long calibration took


class Clock:
    """Times a callable: rounds of as many calls as fill `min_s`, `repeats` rounds. On one CPU thread it
    counts the process's CPU time (time slices lost to other processes on a shared machine do not count,
    the work itself, cache misses included, does) and reports the median round; otherwise the wall clock
    and the fastest round, since other processes only ever slow a wall-clock round down. Every measurement
    keeps the spread of its rounds (slowest / fastest) for the quality checks."""

    def __init__(self, device: str, min_s: float, repeats: int, threads: int = 1):
        import torch

        self.cuda = device == "cuda"
        self.sync = torch.cuda.synchronize if self.cuda else (lambda: None)
        self.min_s, self.repeats = min_s, repeats
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
        value = statistics.median(rounds) if self.process or self.cuda else min(rounds)
        return value * scale

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


def median_points(passes: list[list[Point]]) -> list[Point]:
    """Each size's median time over `passes` sweeps of the same sizes."""
    return [Point(same[0].size, statistics.median(p.seconds for p in same)) for same in zip(*passes, strict=True)]


def median_ops(passes: list[dict[str, list[tuple]]]) -> dict[str, list[tuple]]:
    """Each op's points with their median time (index 2 of a point) over the sweeps that timed the same sizes
    of it as the first did."""
    out = {}
    for name, first in passes[0].items():
        same = [p[name] for p in passes if len(p.get(name, ())) == len(first)]
        out[name] = [(*p[0][:2], statistics.median(q[2] for q in p), *p[0][3:]) for p in zip(*same, strict=True)]
    return out


def median_touch(tries: list[tuple[float, bool]]) -> tuple[float, bool]:
    """The median first-touch cost of the sweeps whose figure was plausible; (0, False) when none was."""
    good = [s for s, plausible in tries if plausible]
    return (statistics.median(good), True) if good else (0.0, False)


def module_call(device: str, clock: Clock) -> float:
    """Seconds an nn.Module call adds to the op it runs (its __call__ and hook machinery, in Python)."""
    import torch

    class Relu(torch.nn.Module):
        def forward(self, t):
            return torch.relu(t)

    small, module = torch.randn(16, device=device), Relu()
    return max(0.0, clock(lambda: module(small), "module call") - clock(lambda: torch.relu(small), "relu call"))


def run(device: str, quick: bool = False, tick: Callable[[str], None] = lambda s: None) -> Measurements:
    """Every microbenchmark on `device` ('cpu' or 'cuda'). `quick` trims sizes and time (tests)."""
    import torch

    from advisor.calibration import kernels, ops
    from advisor.profiler.device import cpu_name, matmul_precision

    start = time.perf_counter()
    cuda = device == "cuda"
    threads = torch.get_num_threads()
    min_s, repeats = (0.002, 2) if quick else (0.02, 5)
    clock = Clock(device, min_s, repeats, threads)
    name = torch.cuda.get_device_name() if cuda else cpu_name()
    m = Measurements(device=device, name=name, threads=threads)
    one = torch.ones(1, device=device)
    m.dispatch_s = clock(lambda: torch.add(one, one), "dispatch")
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

    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    if cuda:  # tf32: fp32 operands on the tensor cores, as --precision tf32 runs them
        dtypes.update(fp16=torch.float16, tf32=torch.float32)
    for label, dt in dtypes.items():
        tick(f"matmul {label}")
        with matmul_precision(label, device):
            m.matmul[label] = kernels.square_points(device, dt, clock, quick)
    tick("matmul shapes")
    m.skinny = kernels.skinny_points(device, clock, quick)
    tick("convolutions")
    m.conv, m.conv_backward = kernels.conv_points(device, clock, quick)
    m.floors = kernels.floors(device, clock)
    if cuda:
        tick("kernels back to back")
        try:
            m.launch_s = kernels.kernel_s(device, clock)
        except RuntimeError as exc:  # no graph capture on this driver: each op's floor is the dispatch instead
            tick(f"no CUDA graph ({exc}): the dispatch is each kernel's floor")
    tick("elementwise")
    n = VECTOR_ELEMENTS >> 4 if quick else VECTOR_ELEMENTS
    x = torch.randn(n, device=device)
    out = torch.empty_like(x)
    t = clock(lambda: torch.ops.aten.gelu.out(x, out=out), "gelu")
    m.vector_seconds, m.vector_bytes = t, 8.0 * n
    m.vector_flops_s = 5.0 * n / max(t - m.dispatch_s, 1e-9)  # the profiler counts gelu (erf) as 5 per element
    quick_clock = Clock(device, min_s / 2, max(2, repeats - 2), threads)  # many small cases: shorter rounds
    quick_clock.spreads = clock.spreads
    passes = 1 if quick or cuda else MEMORY_PASSES
    copies, touches, op_sets = [], [], []
    for i in range(passes):
        of = f" (pass {i + 1} of {passes})" if passes > 1 else ""
        tick("memory bandwidth" + of)
        copies.append(memory_points(device, clock, quick))
        if not cuda:
            from advisor.calibration.validate import first_touch_s_per_byte

            tick("fresh pages" + of)
            touches.append(plausible_first_touch(first_touch_s_per_byte, copies[-1]))
        tick("vector ops by size" + of)
        op_sets.append(ops.measure(device, quick_clock, quick, tick))
    m.copy, m.ops = median_points(copies), median_ops(op_sets)
    if touches:
        m.first_touch_s_per_byte, plausible = median_touch(touches)
        if not plausible:
            m.checks["first_touch_implausible"] = 1.0
    # the same reference figures once more at the end: a busy machine shows as a change between the two
    m.checks["dispatch_last_s"] = clock(lambda: torch.add(one, one), "dispatch again")
    ref = kernels.reference_matmul(device, clock)
    m.checks["matmul_ref_last_s"] = ref
    m.checks["matmul_ref_flops"] = kernels.REFERENCE_FLOPS
    m.spreads = list(clock.spreads)
    m.seconds = time.perf_counter() - start
    return m
