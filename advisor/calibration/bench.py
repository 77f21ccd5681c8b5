"""Microbenchmarks of the local device in eager PyTorch: matmul by size and dtype, memory traffic by size,
elementwise throughput, and the fixed cost of one op in each phase of a training step.

Each benchmark returns plain numbers (seconds per call, FLOPs, bytes); `advisor.calibration.overlay` turns
them into a catalog device and efficiency profile. torch is imported inside the functions.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MATMUL_SIZES = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
COPY_ELEMENTS = tuple(2**k for k in range(8, 26))  # 1 KiB .. 128 MiB of fp32
VECTOR_ELEMENTS = 1 << 22
COLD_SETS = 512  # at most this many operand pairs per matmul size


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
    matmul: dict[str, list[Point]] = field(default_factory=dict)  # dtype -> points by FLOPs
    copy: list[Point] = field(default_factory=list)  # by bytes moved (read + written)
    vector_flops_s: float = 0.0  # achieved FLOP/s of a large, compute-heavy elementwise op (gelu)
    vector_bytes: float = 0.0
    vector_seconds: float = 0.0
    phase_overhead_s: dict[str, float] = field(default_factory=dict)
    conv: list[tuple[float, float, float]] = field(default_factory=list)  # (FLOPs, bytes, seconds) per call
    op_efficiency: dict[str, float] = field(default_factory=dict)  # aten op -> efficiency vs the fp32 peak
    seconds: float = 0.0  # how long calibration took


def timed(
    fn: Callable[[], object],
    sync: Callable[[], None],
    min_s: float,
    repeats: int,
    now: Callable[[], float] = time.perf_counter,
) -> float:
    """Seconds per call of `fn` over `repeats` rounds of as many calls as fill `min_s`: the median on the
    process's CPU clock (the statistic validate reports for model steps), the fastest round on the wall
    clock, because other processes on a shared machine only ever slow a wall-clock round down."""
    fn()
    sync()
    n, elapsed = 1, 0.0
    while True:  # find how many calls fill min_s
        t0 = now()
        for _ in range(n):
            fn()
        sync()
        elapsed = now() - t0
        if elapsed >= min_s or n >= 1 << 16:
            break
        n = max(n * 2, int(n * min_s / max(elapsed, 1e-9)))
    rounds = [elapsed / n]
    for _ in range(repeats - 1):
        t0 = now()
        for _ in range(n):
            fn()
        sync()
        rounds.append((now() - t0) / n)
    return statistics.median(rounds) if now is time.process_time else min(rounds)


def cuda_timed(fn: Callable[[], object], min_s: float, repeats: int) -> float:
    """As `timed`, with CUDA events around each round (the GPU's own clock, launch queue included)."""
    import torch

    fn()
    torch.cuda.synchronize()
    n = 1
    while True:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        rounds = []
        for _ in range(repeats):
            start.record()
            for _ in range(n):
                fn()
            end.record()
            torch.cuda.synchronize()
            rounds.append(start.elapsed_time(end) / 1e3 / n)
        if min(rounds) * n >= min_s or n >= 1 << 16:
            return statistics.median(rounds)
        n = max(n * 2, int(n * min_s / max(min(rounds) * n, 1e-9)))


# (batch, channels, side, groups, kernel): depthwise 3x3, pointwise 1x1 and dense 3x3 layers of CNNs.
CONV_SHAPES = (
    (16, 32, 32, 32, 3),
    (16, 128, 16, 128, 3),
    (16, 512, 8, 512, 3),
    (16, 32, 32, 1, 1),
    (16, 128, 16, 1, 1),
    (16, 512, 8, 1, 1),
    (16, 16, 32, 1, 3),
    (16, 64, 16, 1, 3),
    (16, 256, 8, 1, 3),
)


def conv_points(device: str, clock, quick: bool) -> list[tuple[float, float, float]]:
    """Forward and backward (input and weight gradients) of CNN-like conv2d layers, NCHW as eager runs
    them: (FLOPs, bytes read + written, seconds) per call, counted as the profiler counts them."""
    import torch
    import torch.nn.functional as F

    out = []
    for n, c, side, groups, k in CONV_SHAPES[::4] if quick else CONV_SHAPES:
        x = torch.randn(n, c, side, side, device=device, requires_grad=True)
        w = torch.randn(c, c // groups, k, k, device=device, requires_grad=True)
        y = F.conv2d(x, w, padding=k // 2, groups=groups)
        gy = torch.randn_like(y)
        flops = 2.0 * y.numel() * (c // groups) * k * k
        act, wb = 4.0 * x.numel(), 4.0 * w.numel()
        t_fwd = clock(lambda x=x, w=w, k=k, g=groups: F.conv2d(x, w, padding=k // 2, groups=g))
        t_both = clock(
            lambda x=x, w=w, k=k, g=groups, gy=gy: torch.autograd.grad(
                F.conv2d(x, w, padding=k // 2, groups=g), (x, w), gy
            )
        )
        out.append((flops, 2 * act + wb, t_fwd))  # read x and w, write y (same size as x here)
        out.append((2 * flops, 3 * act + 2 * wb, max(t_both - t_fwd, 0.1 * t_both)))  # read gy, x, w; write gx, gw
    return out


def run(device: str, quick: bool = False, tick: Callable[[str], None] = lambda s: None) -> Measurements:
    """Every microbenchmark on `device` ('cpu' or 'cuda'). `quick` trims sizes and time (tests)."""
    import torch

    from advisor.profiler.device import cpu_name

    start = time.perf_counter()
    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    min_s, repeats = (0.002, 2) if quick else (0.02, 5)
    cold_bytes = (256e6 if cuda else 64e6) / (16 if quick else 1)  # beyond the last-level cache

    # On one CPU thread, count the process's CPU time: time slices lost to other work on a shared machine
    # then do not count, while the work itself (cache misses included) does.
    now = time.process_time if not cuda and torch.get_num_threads() == 1 else time.perf_counter

    def clock(fn):
        return cuda_timed(fn, min_s, repeats) if cuda else timed(fn, sync, min_s, repeats, now)

    name = torch.cuda.get_device_name() if cuda else cpu_name()
    m = Measurements(device=device, name=name, threads=torch.get_num_threads())
    one = torch.ones(1, device=device)
    m.dispatch_s = clock(lambda: torch.add(one, one))

    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    if cuda:
        dtypes["fp16"] = torch.float16
    sizes = MATMUL_SIZES[::3] if quick else MATMUL_SIZES
    if cuda and not quick:
        sizes = (*sizes, 2048, 4096, 8192)
    for label, dt in dtypes.items():
        tick(f"matmul {label}")
        points = []
        for n in sizes:
            # Operands rotate through more memory than the caches hold: in a training step a GEMM's weights
            # and activations arrive from memory, not from the cache a repeated call would leave them in.
            sets = [
                (torch.randn(n, n, device=device, dtype=dt), torch.randn(n, n, device=device, dtype=dt))
                for _ in range(max(2, min(COLD_SETS, int(cold_bytes / (2 * n * n * dt.itemsize)))))
            ]
            # The three layouts of a linear layer's GEMMs: forward x·Wᵀ, input gradient g·W, weight gradient gᵀ·x.
            times = []
            for layout in (lambda a, b: torch.mm(a, b.t()), torch.mm, lambda a, b: torch.mm(a.t(), b)):
                turn = itertools.cycle(sets)
                times.append(clock(lambda turn=turn, f=layout: f(*next(turn))))
            points.append(Point(2.0 * n**3, statistics.mean(times)))
        m.matmul[label] = points

    tick("convolutions")
    m.conv = conv_points(device, clock, quick)

    tick("memory bandwidth")
    elements = COPY_ELEMENTS[::4] if quick else COPY_ELEMENTS
    if cuda and not quick:
        elements = (*elements, 1 << 27, 1 << 28)
    for n in elements:
        src = torch.randn(n, device=device)
        dst = torch.empty_like(src)
        m.copy.append(Point(8.0 * n, clock(lambda s=src, d=dst: d.copy_(s))))

    tick("elementwise")
    n = VECTOR_ELEMENTS >> 4 if quick else VECTOR_ELEMENTS
    x = torch.randn(n, device=device)
    out = torch.empty_like(x)
    t = clock(lambda: torch.ops.aten.gelu.out(x, out=out))
    m.vector_seconds, m.vector_bytes = t, 8.0 * n
    m.vector_flops_s = 5.0 * n / max(t - m.dispatch_s, 1e-9)  # the profiler counts gelu (erf) as 5 per element
    tick("attention and transcendental ops")
    from advisor.calibration.ops import measure as op_measure

    peak = max(p.size / max(p.seconds - m.dispatch_s, 0.1 * p.seconds) for p in m.matmul["fp32"])
    m.op_efficiency = op_measure(device, clock, peak, m.dispatch_s)
    m.seconds = time.perf_counter() - start
    return m
