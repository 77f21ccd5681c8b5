"""Matrix-class kernels: square GEMMs by size per dtype, GEMMs with one small dimension by arithmetic
intensity, and convolutions (forward, and backward to input and weight) by arithmetic intensity.

Operands rotate through more memory than the caches hold: in a training step a GEMM's weights and
activations arrive from memory, not from the cache a repeated call would leave them in.
"""

from __future__ import annotations

import itertools
import statistics

from advisor.calibration.bench import Clock, Point, alternate
from advisor.vocab import GEMM_LAYOUTS  # in the order skinny_points times them

MATMUL_SIZES = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
COLD_SETS = 512  # at most this many operand pairs per size
REFERENCE_N = 512
REFERENCE_FLOPS = 2.0 * REFERENCE_N**3
# GEMMs of M x 1024 by 1024 x 1024: one dimension as small as a batch of rows or one recurrent step
SKINNY_M = (4, 8, 16, 32, 64, 128, 256)
SKINNY_NK = 1024
# (batch, input channels, output channels, side, groups, kernel, stride): pointwise 1x1 and dense 3x3 layers of CNNs,
# a 3-channel stem and the stride-2 layers that halve a stage's resolution. The 1x1 layers with few channels (at 4-8
# FLOPs a byte) come three times: on the development VM's Xeon (one thread, 2026-12-05) the 32-channel one took 1.0 or
# 3.8 ms from one set of tensors to the next, where 12 into 40 and 64 into 16 channels hold at 13-18 GFLOP/s
CONV_SHAPES = (
    (16, 32, 32, 32, 1, 1, 1),
    (16, 16, 64, 32, 1, 1, 1),
    (16, 64, 16, 32, 1, 1, 1),
    (16, 128, 128, 16, 1, 1, 1),
    (16, 512, 512, 8, 1, 1, 1),
    (16, 16, 16, 32, 1, 3, 1),
    (16, 64, 64, 16, 1, 3, 1),
    (16, 256, 256, 8, 1, 3, 1),
    (16, 3, 16, 32, 1, 3, 1),
    (16, 16, 32, 32, 1, 3, 2),
    (16, 32, 64, 16, 1, 1, 2),
)
# Depthwise layers (one input channel a group), the same fields: their own curves (overlay: depthwise_by_intensity),
# since their efficiency does not follow FLOPs per byte as a dense layer's does. At stride 2 oneDNN's kernel reaches
# half the rate of the unstrided one at 0.9 FLOPs per byte (12.5-14.4 against 26-29 GFLOP/s forward on the EPYC, one
# thread, batch 16); the larger kernels (a 5x5 or 7x7 does 6 or 12 FLOPs a byte) run their forward 3-4 times as fast
# as a 3x3 but their weight gradient on a slow kernel: on the development VM's Xeon (one thread, 2026-12-05) 3 GFLOP/s
# at 5x5 and 7x7 alike against 6-14 at 3x3, the backward of a 7x7 layer ten times the price a dense layer of its
# FLOPs per byte would have.
DEPTHWISE_SHAPES = (
    (16, 32, 32, 32, 32, 3, 1),
    (16, 128, 128, 16, 128, 3, 1),
    (16, 512, 512, 8, 512, 3, 1),
    (16, 64, 64, 32, 64, 3, 2),
    (16, 256, 256, 16, 256, 3, 2),
    (16, 64, 64, 16, 64, 5, 1),
    (16, 256, 256, 8, 256, 5, 1),
    (16, 64, 64, 16, 64, 7, 1),
    (16, 256, 256, 8, 256, 7, 1),
)
# Transposed convolutions (ConvTranspose2d upsampling; the same fields, the input's side; padding (k - stride) / 2):
# their own curves (overlay: transposed_by_intensity). oneDNN runs them as the input gradient of a strided
# convolution, at a fraction of a plain layer's rate of the same FLOPs per byte: on the development VM's Xeon (one
# thread, 2026-12-05) a U-Net's 2x2 stride-2 upsampling from 128 to 64 channels at 16x16, batch 16, took 9.9 ms
# forward (27 GFLOP/s) and 17 ms backward, priced 4.4 and 8.7 on the plain curves. Four 2x2 stride-2 layers over the
# channel counts of U-Nets and diffusion nets, and a DCGAN-style 4x4 stride-2 one.
TRANSPOSED_SHAPES = (
    (16, 32, 16, 32, 1, 2, 2),
    (16, 64, 32, 32, 1, 2, 2),
    (16, 128, 64, 16, 1, 2, 2),
    (16, 256, 128, 8, 1, 2, 2),
    (16, 64, 32, 16, 1, 4, 2),
)
# CPUs: oneDNN's reorders of NCHW activations into its channel-blocked layout and back (reorder_points), on 1x1 layers
# of as many channels out as in, one count on the blocks (64) and one off them (58, ShuffleNet's), from half a MB
# to 134 MB a pass (the calibration's other layers hold 2 MB): in and out of the caches
REORDER_CHANNELS = (64, 58)
REORDER_SIDES = (8, 16, 32, 64, 128)
REORDER_BATCH = 16
# A CPU also times every layer above at 1/SMALL_BATCH_SHARE of its batch (conv_points), except where PyTorch would
# run that batch on its native kernel instead of oneDNN (estimator.kernels.native_conv: an unstrided 1x1 layer on one
# thread under 16 samples), whose pair would read that kernel's lack of oneDNN's fixed cost as the fixed cost
SMALL_BATCH_SHARE = 4
# CPUs: dense 3x3 layers with as many channels out as in, at counts on and off the blocks a library with
# channel-blocked layouts may use (oneDNN: 8 or 16), batch 16 at 32x32 (a few milliseconds each, far above a call's
# fixed cost): how their times grow with the channels says which block the library rounds them up to
BLOCK_CHANNELS = (20, 24, 32, 40, 48)
BLOCK_CANDIDATES = (1, 4, 8, 16, 32)
# A GPU runs the layers above in a few microseconds: there the calibration adds a ResNet-50 stage's layers at
# batch 32, whose convolutions keep every multiprocessor busy (the efficiency they reach, not a launch's latency).
CONV_SHAPES_GPU = (
    (32, 64, 64, 56, 1, 3, 1),
    (32, 256, 64, 56, 1, 1, 1),
    (32, 128, 128, 28, 1, 3, 1),
    (32, 256, 256, 14, 1, 3, 1),
    (32, 1024, 256, 14, 1, 1, 1),
    (32, 512, 512, 7, 1, 3, 1),
    (32, 3, 64, 224, 1, 7, 2),
)
DEPTHWISE_SHAPES_GPU = ((32, 96, 96, 56, 96, 3, 1),)


def _cold_bytes(device: str, quick: bool) -> float:
    return (256e6 if device == "cuda" else 64e6) / (16 if quick else 1)  # beyond the last-level cache


def _layouts():
    """The three GEMMs of a linear layer: forward x·Wᵀ, input gradient g·W, weight gradient gᵀ·x."""
    import torch

    return (lambda a, b: torch.mm(a, b.t()), torch.mm, lambda a, b: torch.mm(a.t(), b))


def square_points(device: str, dtype, clock: Clock, quick: bool) -> list[Point]:
    import torch

    sizes = MATMUL_SIZES[::3] if quick else MATMUL_SIZES
    if device == "cuda" and not quick:
        sizes = (*sizes, 2048, 4096, 8192)
    cold = _cold_bytes(device, quick)
    points = []
    for n in sizes:
        sets = [
            (torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype))
            for _ in range(max(2, min(COLD_SETS, int(cold / (2 * n * n * dtype.itemsize)))))
        ]
        times = []
        for layout in _layouts():
            turn = itertools.cycle(sets)
            times.append(clock(lambda turn=turn, f=layout: f(*next(turn)), f"mm {n} {dtype}"))
        points.append(Point(2.0 * n**3, statistics.mean(times)))
    return points


def reference_matmul(device: str, clock: Clock) -> float:
    """Seconds of one fp32 512³ GEMM on hot operands: the figure quality.py compares between runs."""
    import torch

    a = torch.randn(REFERENCE_N, REFERENCE_N, device=device)
    b = torch.randn(REFERENCE_N, REFERENCE_N, device=device)
    return clock(lambda: torch.mm(a, b), "reference mm")


def skinny_points(device: str, clock: Clock, quick: bool) -> dict[str, list[tuple[float, float, float]]]:
    """fp32 GEMMs (M x K)·(K x N) with M small, in the three layouts of GEMM_LAYOUTS: {layout: [(FLOPs, bytes read
    + written, seconds) per call]}, counted as the profiler counts an mm (both operands read, the product written).
    The layouts are not alike at a small M: on the development VM's Xeon (one thread, 2026-12-05) x·Wᵀ at M = 16 takes
    0.65 ms, gᵀ·x 0.28 ms, for the same FLOPs and bytes."""
    import torch

    cold = _cold_bytes(device, quick)
    nk = SKINNY_NK // (4 if quick else 1)
    out: dict[str, list[tuple[float, float, float]]] = {layout: [] for layout in GEMM_LAYOUTS}
    for m in SKINNY_M[::2] if quick else SKINNY_M:
        nbytes = 4.0 * (m * nk + nk * nk + m * nk)
        count = max(2, min(COLD_SETS, int(cold / nbytes)))
        # x (m, k), W (n, k), g (m, n): forward x·Wᵀ, input gradient g·W, weight gradient gᵀ·x (inner
        # dimension m, the n x k product written): the same FLOPs and bytes in each layout
        sets = [
            (torch.randn(m, nk, device=device), torch.randn(nk, nk, device=device), torch.randn(m, nk, device=device))
            for _ in range(count)
        ]
        layouts = (
            lambda s: torch.mm(s[0], s[1].t()),
            lambda s: torch.mm(s[2], s[1]),
            lambda s: torch.mm(s[2].t(), s[0]),
        )
        for name, layout in zip(GEMM_LAYOUTS, layouts, strict=True):
            turn = itertools.cycle(sets)
            seconds = clock(lambda turn=turn, f=layout: f(next(turn)), f"mm {m}x{nk} {name}")
            out[name].append((2.0 * m * nk * nk, nbytes, seconds))
    return out


def layouts_mean(by_layout: dict[str, list[tuple[float, float, float]]]) -> list[tuple[float, float, float]]:
    """The three layouts' (FLOPs, bytes, seconds) points as one list, each point's seconds their mean: the cap
    for GEMMs whose layout a profile does not tell (`matmul_by_intensity`)."""
    rows = [by_layout[name] for name in GEMM_LAYOUTS if by_layout.get(name)]
    if not rows:
        return []
    return [(f, b, statistics.mean(r[i][2] for r in rows)) for i, (f, b, _) in enumerate(rows[0])]


# GEMMs with a bias (bias_points): (rows, reduction, columns) of linear layers, a transformer's and an MLP's
BIAS_SHAPES = ((1024, 128, 384), (1024, 512, 128), (4096, 256, 256), (8192, 64, 64))


def bias_points(device: str, clock: Clock, quick: bool) -> tuple[list[Point], list[Point]]:
    """CPUs: linear layers (BIAS_SHAPES, every other with `quick`), x·Wᵀ as `mm` and as `addmm` with a bias, by the
    bytes of their output: (mm, addmm) Points. Before its GEMM the CPU's addmm writes the
    bias, broadcast, into the output and the GEMM adds its product to what it reads back there (beta = 1), passes
    over the output that a GEMM alone (what the matmul curves time) does not make. On the project's Xeon VM the
    difference came to 4-30 % of the GEMM, 19-58 GB/s of output (estimator: Efficiency.gemm_bias_passes)."""
    import torch

    plain, biased = [], []
    for rows, inner, cols in BIAS_SHAPES[::2] if quick else BIAS_SHAPES:
        x, w, b = (torch.randn(*s, device=device) for s in ((rows, inner), (cols, inner), (cols,)))
        what, size = f"linear {rows}x{inner}x{cols}", 4.0 * rows * cols
        plain.append(Point(size, clock(lambda x=x, w=w: torch.mm(x, w.t()), what)))
        biased.append(Point(size, clock(lambda x=x, w=w, b=b: torch.addmm(b, x, w.t()), what + " with a bias")))
    return plain, biased


def output_points(device: str, clock: Clock, quick: bool) -> tuple[list[Point], list[Point]]:
    """CPUs: linear layers' GEMMs (BIAS_SHAPES, every other with `quick`), x·Wᵀ by the bytes of their output, written
    into one output again and again and into outputs that rotate through more memory than the caches hold: (again,
    rotating) Points; the operands rotate alike in both. In a training step a GEMM's output is a fresh tensor in
    memory no recent op touched (a forward's activations are kept for the backward, a backward's gradients pass on),
    while the matmul curves time products written where the previous call's output was, in the cache. On the
    project's Xeon VM (two threads, 2026-12-07) the rotating outputs added 15-107 µs to GEMMs of 0.5-4 MB of output
    (20-50 GB/s), and nanoGPT's GEMMs took 31 ms in its step against 27 ms timed alone (estimator:
    Efficiency.gemm_output_passes)."""
    import torch

    cold = _cold_bytes(device, quick)
    again, rotating = [], []
    for rows, inner, cols in BIAS_SHAPES[::2] if quick else BIAS_SHAPES:
        size = 4.0 * rows * cols
        count = max(2, min(COLD_SETS, int(cold / (size + 4.0 * inner * (rows + cols)))))
        sets = [
            (torch.randn(rows, inner, device=device), torch.randn(cols, inner, device=device))
            + (torch.empty(rows, cols, device=device),)
            for _ in range(count)
        ]
        for out, into in ((again, sets[0][2]), (rotating, None)):
            turn = itertools.cycle(sets)

            def call(turn=turn, into=into):
                x, w, fresh = next(turn)
                return torch.mm(x, w.t(), out=fresh if into is None else into)

            out.append(Point(size, clock(call, f"linear {rows}x{inner}x{cols}{', cold output' * (into is None)}")))
    return again, rotating


def floors(device: str, clock: Clock) -> dict[str, float]:
    """Seconds of the smallest GEMMs and convolutions, their library setup: {aten op: seconds per call}."""
    import torch
    import torch.nn.functional as F

    A = torch.ops.aten
    a, b, bias = (torch.randn(4, 4, device=device) for _ in range(3))
    x, w = torch.randn(1, 4, 4, 4, device=device), torch.randn(4, 4, 3, 3, device=device)
    y = F.conv2d(x, w, padding=1)
    args = ([1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    cases = {
        "aten.mm": lambda: A.mm(a, b),
        "aten.addmm": lambda: A.addmm(bias[0], a, b),
        "aten.bmm": lambda: A.bmm(a[None], b[None]),
        "aten.convolution": lambda: A.convolution(x, w, None, *args),
        "aten.convolution_backward": lambda: A.convolution_backward(y, x, w, None, *args, [True, True, False]),
    }
    return {op: clock(fn, f"smallest {op}") for op, fn in cases.items()}


def conv_points(device: str, clock: Clock, quick: bool, depthwise: bool = False, transposed: bool = False):
    """Forward and backward (input and weight gradients) of CNN-like conv2d layers (CONV_SHAPES, or with
    `depthwise` DEPTHWISE_SHAPES, with `transposed` TRANSPOSED_SHAPES), NCHW as eager runs them: lists of (FLOPs,
    bytes read + written, seconds) per call, counted by the profiler's counter, as (forward, backward, forward at a
    quarter of the batch, backward at a quarter of the batch), then the full-batch points' `geometry` (forward,
    backward). A CPU times each dense and depthwise layer at both
    batches (SMALL_BATCH_SHARE): from two samples on, oneDNN's call costs some 50-190 µs that do not grow with the
    batch, which the two sizes separate from the per-sample rate (see overlay.conv_setup); a GPU, and every device's
    transposed layers, the full batch only (the quarter-batch lists stay empty). Last, on a CPU, the factor each
    direction's times, both batches alike, were scaled by (`in_turn`: forward, backward), see `in_turn`."""
    fwd, bwd, fwd_small, bwd_small, geo_fwd, geo_bwd = [], [], [], [], [], []
    turns: dict[str, list] = {"forward": [], "backward": [], "forward_small": [], "backward_small": []}
    if depthwise:
        gpu = DEPTHWISE_SHAPES_GPU if device == "cuda" else ()
        shapes = DEPTHWISE_SHAPES[::4] if quick else DEPTHWISE_SHAPES + gpu
    elif transposed:
        shapes = TRANSPOSED_SHAPES[::4] if quick else TRANSPOSED_SHAPES
    else:
        shapes = CONV_SHAPES[::4] if quick else CONV_SHAPES + (CONV_SHAPES_GPU if device == "cuda" else ())
    for n, cin, cout, side, groups, k, stride in shapes:
        # transposed layers at one batch: the call's fixed cost comes from the others (overlay.conv_setup)
        small = max(1, n // SMALL_BATCH_SHARE) if device != "cuda" and n > 1 and not transposed else None
        if small and _native(device, small, k, stride, groups):  # timed at the full batch: overlay.conv_setup
            small = n  # leaves a pair of one size out, and the layer still runs in turn at both "batches"
        shape = f"{'transposed ' * transposed}conv {cin}->{cout}ch {side}px g{groups} k{k} s{stride}"
        full, full_fns = _conv_layer(device, clock, n, cin, cout, side, groups, k, stride, shape, transposed)
        part = part_fns = None
        if small:
            part, part_fns = _conv_layer(
                device, clock, small, cin, cout, side, groups, k, stride, f"{shape} batch {small}", transposed
            )
        for i, (out, out_small, geo, key) in enumerate(
            ((fwd, fwd_small, geo_fwd, "forward"), (bwd, bwd_small, geo_bwd, "backward"))
        ):
            if full[i] is None or (part is not None and part[i] is None):
                continue
            out.append(full[i])
            geo.append(geometry(n, cin, cout, side, k, stride, transposed))
            if device != "cuda":  # the layers' calls, kept to run in turn (a GPU's are timed alone only)
                turns[key].append(full_fns[i])
            if part is not None:  # the two sizes come in pairs, in the same order
                out_small.append(part[i])
                if device != "cuda":
                    turns[key + "_small"].append(part_fns[i])
    factors = {}
    what = "transposed " if transposed else "depthwise " if depthwise else ""
    lists = {"forward": fwd, "backward": bwd, "forward_small": fwd_small, "backward_small": bwd_small}
    for direction in ("forward", "backward"):
        keys = [k for k in (direction, direction + "_small") if 1 < len(turns[k]) == len(lists[k])]
        if not keys:
            continue
        seconds = sum(clock(lambda fns=turns[k]: [f() for f in fns], f"{what}conv layers in turn ({k})") for k in keys)
        scaled, factors[direction] = in_turn([lists[k] for k in keys], seconds)
        for k, points in zip(keys, scaled, strict=True):
            lists[k][:] = points
    return fwd, bwd, fwd_small, bwd_small, geo_fwd, geo_bwd, factors


def _native(device: str, n: int, k: int, stride: int, groups: int) -> bool:
    """Whether PyTorch runs an fp32 conv2d layer of batch `n` on its native kernel rather than oneDNN at the current
    thread count (estimator.kernels.native_conv, NATIVE_CONV_BATCH): a CPU at one thread, an ungrouped, unstrided
    1x1 layer (these have no padding), under NATIVE_CONV_BATCH samples."""
    import torch

    from advisor.estimator.kernels import NATIVE_CONV_BATCH

    if device == "cuda" or torch.get_num_threads() != 1:
        return False
    return k == 1 and stride == 1 and groups == 1 and n < NATIVE_CONV_BATCH


MAX_IN_TURN = 2.0  # layers in turn this much slower than alone, or more: a disturbed measurement, not kept


def in_turn(sets: list[list[tuple[float, float, float]]], seconds: float) -> tuple[list[list[tuple]], float]:
    """`sets` of points (FLOPs, bytes, seconds of one layer called again and again: the same layers at the full and
    the quarter batch) scaled to what the layers take called one after another (`seconds`: one call of each, in
    turn, every set), as a model's layers run, and the factor (at least 1, under MAX_IN_TURN, else 1). Alone, a
    layer's operands and code stay in the core's own caches; in turn the other layers push them out: on the
    project's Zen 4 VM (one thread) the eleven dense layers took 3-17 % longer in turn at batch 4, 8 and 16 than
    the sum of their times alone (three small layers of 4 channels: no longer; a ResNet's 3x3 layers at batch 32:
    10 %), and a small ResNet's convolutions 13-22 % longer in its training step than each alone. Each layer at
    each batch takes the same share of the difference: one factor for both batches keeps the fixed cost per call
    read between them (overlay.conv_setup) what the layers alone give, scaled as their rate is. Scaled apart, a
    quarter batch's larger factor (1.17-1.23 against the full batch's 1.00-1.01 in one calibration) was read as
    fixed cost: run 55's one-thread forward curve stood at 1.74 of the GEMM peak, with 142 µs a call."""
    alone = sum(t for points in sets for *_, t in points)
    factor = seconds / alone if alone > 0 else 1.0
    factor = factor if 1.0 <= factor < MAX_IN_TURN else 1.0
    return [[(f, b, t * factor) for f, b, t in points] for points in sets], factor


def geometry(n: int, cin: int, cout: int, side: int, k: int, stride: int, transposed: bool) -> tuple:
    """(input channels, output channels, input elements, output elements, a spatial kernel) of one conv2d layer at
    batch `n`: what estimator.kernels.layout_passes needs to price its layout reorders; channels 0 for a transposed
    layer, whose reorders stay in its own curves."""
    out_side = side * stride if transposed else -(-side // stride)
    return (0 if transposed else cin), cout, n * cin * side * side, n * cout * out_side * out_side, int(k > 1)


def reorder_points(device: str, clock: Clock, quick: bool) -> list[tuple[int, float, float]]:
    """CPUs: (channels, elements, seconds) of oneDNN's reorders around a convolution, by size and by channels on and
    off its block: a 1x1 layer of C channels in and out at batch REORDER_BATCH on NCHW input (reordered into the
    blocked layout and back) less the same layer on channels-last input (NHWC kernels, no reorder), at
    REORDER_SIDES. The layer does little arithmetic, so the reorders are much of its time; the difference is both
    passes' seconds (estimator.kernels.layout_passes: one in, one back)."""
    import torch
    import torch.nn.functional as F

    out = []
    for channels in REORDER_CHANNELS:
        w = torch.randn(channels, channels, 1, 1, device=device)
        w_last = w.contiguous(memory_format=torch.channels_last)
        for side in REORDER_SIDES[1::2] if quick else REORDER_SIDES:
            plain = [torch.randn(REORDER_BATCH, channels, side, side, device=device) for _ in range(2)]
            last = [t.contiguous(memory_format=torch.channels_last) for t in plain]
            what = f"reorders {channels}ch {side}px"
            t_plain = clock(alternate([lambda t=t, w=w: F.conv2d(t, w) for t in plain]), what + " NCHW")
            t_last = clock(alternate([lambda t=t, w=w_last: F.conv2d(t, w) for t in last]), what + " NHWC")
            out.append((channels, float(plain[0].numel()), t_plain - t_last))
    return out


def block_points(device: str, clock: Clock, quick: bool) -> list[tuple[int, int, float]]:
    """(input channels, output channels, seconds of forward and backward) of the BLOCK_CHANNELS layers (a quick
    run: three of them at a quarter of the batch); overlay.channel_block reads the block off them."""
    n = 4 if quick else 16
    out = []
    for c in BLOCK_CHANNELS[::2] if quick else BLOCK_CHANNELS:
        (fwd, bwd), _ = _conv_layer(device, clock, n, c, c, 32, 1, 3, 1, f"conv {c}->{c}ch 32px (channel blocks)")
        if fwd is not None and bwd is not None:
            out.append((c, c, fwd[2] + bwd[2]))
    return out


def _conv_layer(
    device: str, clock: Clock, n: int, cin, cout, side, groups, k, stride, shape: str, transposed: bool = False
) -> tuple[list, tuple]:
    """([(FLOPs, bytes, seconds) of the forward call or None, the same of the backward call or None], (a forward
    call, a backward call)) of one conv2d layer (`transposed`: a ConvTranspose2d, padded by (k - stride) / 2) at
    batch `n`."""
    import torch

    from advisor.calibration.ops import _counted

    A = torch.ops.aten
    pad = (k - stride) // 2 if transposed else k // 2
    args = ([stride] * 2, [pad] * 2, [1, 1], transposed, [0, 0], groups)
    calls, back = [], []
    for _ in range(2):
        x = torch.randn(n, cin, side, side, device=device)
        w = torch.randn(*((cin, cout // groups) if transposed else (cout, cin // groups)), k, k, device=device)
        y = A.convolution(x, w, None, *args)
        gy = torch.randn_like(y)
        calls.append(lambda x=x, w=w, a=args: A.convolution(x, w, None, *a))
        back.append(lambda x=x, w=w, gy=gy, a=args: A.convolution_backward(gy, x, w, None, *a, [True, True, False]))
    out = []
    for fns, what in ((calls, shape), (back, shape + " backward")):
        counted = [c for c in _counted(fns[0]) if c[0].startswith("aten.convolution")]
        out.append((counted[0][1], counted[0][2], clock(alternate(fns), what)) if len(counted) == 1 else None)
    return out, (calls[0], back[0])


def kernel_s(device: str, clock: Clock, kernels: int = 200) -> float:
    """Device seconds per kernel of tiny kernels run back to back: a CUDA graph of `kernels` one-element adds,
    replayed (no host in between, so what is left is each kernel's launch on the device and its few
    microseconds of run): the floor under every kernel of a step, and the gap between the kernels a library
    launches (cuDNN's recurrent steps)."""
    import torch

    x = torch.zeros(1, device=device)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up off the default stream, as graph capture asks
        for _ in range(3):
            x.add_(1.0)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(kernels):
            x.add_(1.0)
    return clock(graph.replay, f"graph of {kernels} kernels") / kernels
