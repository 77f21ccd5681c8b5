"""Microbenchmarks of the local device in eager PyTorch: matmul by size and dtype, memory traffic by size,
elementwise throughput, and the fixed cost of one op in each phase of a training step.

Each benchmark returns plain numbers (seconds per call, FLOPs, bytes); `advisor.calibration.overlay` turns
them into a catalog device and efficiency profile. torch is imported inside the functions.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MATMUL_SIZES = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
COPY_ELEMENTS = tuple(2**k for k in range(8, 26))  # 1 KiB .. 128 MiB of fp32
VECTOR_ELEMENTS = 1 << 22


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
    seconds: float = 0.0  # how long calibration took


def timed(fn: Callable[[], object], sync: Callable[[], None], min_s: float, repeats: int) -> float:
    """Seconds per call of `fn`: the fastest of `repeats` rounds of as many calls as fill `min_s`. The
    fastest, not the median, because other processes on a shared machine only ever slow a round down."""
    fn()
    sync()
    n, elapsed = 1, 0.0
    while True:  # find how many calls fill min_s
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        elapsed = time.perf_counter() - t0
        if elapsed >= min_s or n >= 1 << 16:
            break
        n = max(n * 2, int(n * min_s / max(elapsed, 1e-9)))
    rounds = [elapsed / n]
    for _ in range(repeats - 1):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        rounds.append((time.perf_counter() - t0) / n)
    return min(rounds)


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


def run(device: str, quick: bool = False, tick: Callable[[str], None] = lambda s: None) -> Measurements:
    """Every microbenchmark on `device` ('cpu' or 'cuda'). `quick` trims sizes and time (tests)."""
    import torch

    from advisor.profiler.device import cpu_name

    start = time.perf_counter()
    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    min_s, repeats = (0.002, 2) if quick else (0.03, 5)

    def clock(fn):
        return cuda_timed(fn, min_s, repeats) if cuda else timed(fn, sync, min_s, repeats)

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
            a = torch.randn(n, n, device=device, dtype=dt)
            b = torch.randn(n, n, device=device, dtype=dt)
            points.append(Point(2.0 * n**3, clock(lambda a=a, b=b: torch.mm(a, b))))
        m.matmul[label] = points

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
    m.seconds = time.perf_counter() - start
    return m
