"""What a GPU kernel library really runs for a profiled op, beyond its FLOPs and bytes: the data here turns
a profile record (op, shapes, layout) into adjustments of its roofline time, per device family
(catalog/efficiency.yaml says which apply and with what figures).

- Tensor-core eligibility: cuDNN runs a 16-bit convolution on tensor cores when its input and output
  channels are multiples of `tensor_core_channels` (8 for fp16/bf16: 16 bytes; a tf32 one at half the count, 4,
  the same 16 bytes). Others run on the CUDA cores, or, where the library pads channels (`tensor_core_padding`,
  cuDNN 7.6.3 and later), a dense one on tensor cores over the padded channels: the padded lanes are wasted
  work and the padded copy of the input or output crosses memory.
- Layout: a 16-bit tensor-core convolution on NCHW input is bracketed by transposes to NHWC and back
  (`nchw_transpose`): its input and output cross memory once more each way.
- Layout (CPUs): oneDNN runs a convolution on NCHW tensors in a channel-blocked layout (16 channels on AVX-512), so
  each call reorders its input into that layout and its output back (`layout_passes`); each pass reads and writes
  the activation, padded to whole blocks, at a rate that falls from the caches to memory (`conv_reorder`, by the
  bytes of a pass; slower for channel counts off the block). A ShuffleNet-style layer of 58 channels at 64x64,
  batch 32 (one thread, the development VM's EPYC): 16.3 ms of reorders around a 6.5 ms depthwise kernel, where the
  calibration's 2 MB layers spend 0.25 ms on them. Channels-last layers run on NHWC kernels without them.
- Backend choice (CPUs): PyTorch gives an fp32 convolution to oneDNN only where its rule says oneDNN is faster
  (ConvUtils.h, use_mkldnn): an unstrided 1x1 layer on one thread under 16 samples a call runs on the native kernel
  (slow_conv2d), one GEMM a sample, with no reorders and no oneDNN set-up (`native_conv`, `native_gemms`). Priced
  on the oneDNN curves, a Network-in-Network's 1x1 layers at batch 8 (the development VM's Xeon, one thread, in its
  training step) came out 70 % over forward and 55 % over backward; as their GEMMs, 23 % over and 14 % under.
- Wave quantization: a GEMM or implicit-GEMM convolution runs as ceil(M/tm)·ceil(N/tn) output tiles over
  `sm_count` multiprocessors; the last, partial wave costs a full one. A GEMM with too few tiles and a long
  reduction (a weight gradient) splits the reduction over the idle multiprocessors (split-K, `wave_share`).
- Alignment: a 16-bit GEMM whose dimensions are not all multiples of `tensor_core_channels` (16 bytes) cannot
  use the vectorized tensor-core kernels; the library falls back to ones that load element by element
  (CUTLASS align1/align2), which run at about `unaligned_gemm_flops_per_clock` per multiprocessor and clock
  on any generation, far below a Hopper's or an A100's aligned rate (a 267,735-word output layer).
- Batch norm on NCHW: where a channel's data does not fit on one multiprocessor, cuDNN gives each channel one
  thread block (`batch_norm_nchw`): a call takes the channel's elements over one block's rate, however few the
  channels and however fast the memory (a 32-channel layer at 112x112 uses 32 of an H200's 132 SMs).
- Row gathers: an embedding lookup gives each looked-up row one thread block per 4 KB of it (`row_gather`), so
  a lookup of short rows takes as long as the multiprocessors need to start and retire its blocks (an H200: 0.61 ns
  a row for rows of 16 B to 1 KB alike, random or in order; 2 KB rows move at the memory rate).
- Strided inputs: an embedding gradient whose incoming gradient is a column slice (cat's backward hands
  on such views) is copied to a contiguous tensor before the kernel runs (`strided_copy_bytes`; PyTorch's
  Embedding.cu and EmbeddingBag.cu, and the CPU kernels, call grad.contiguous()), and so is a LayerNorm's permuted
  input, forward and backward (layer_norm_cpu: input.expect_contiguous()); the profile marks those records.
- Random draws (CPUs): PyTorch's CPU bernoulli_ and dropout kernels branch on each draw, so a draw that goes
  against the likelier outcome is a mispredicted branch: a call's time grows linearly in min(p, 1 - p) (the
  development VM's EPYC, one thread, 2^17 floats: 4.4 ns an element at p = 0.999, 6.0 at 0.9, 7.6 at 0.8, 12.0 at
  0.5, the same either side of one half). Calibration measures each draw op's curve at p = 0.9 and its time at 0.5
  (`draw_half_ratio`); `draw_factor` scales the curve to the profile's probability.
- Copies between layouts: a transposed or permuted tensor made contiguous (aten.clone, copy_ or _to_copy between
  two layouts, and the copies 'strided' records make first) reads or writes in runs as long as the innermost
  dimension the two layouts share (`OpRecord.copy_run`), and short runs leave most of each cache line unused
  until the next pass. On the development VM's EPYC at one thread a 1 MB copy took 6-8x a plain copy's time in
  runs of 1 and 4 floats, 1.2-1.8x in runs of 16, 1.1x in runs of 64 (a mixer's token-mixing transposes, an
  attention's heads permuted); sides at a power of two, 22-40x (calibration steers clear of them). Calibration
  measures the ratio by run length (`permuted_copy`); `copy_factor` reads it.
The shapes come from the profile record's `shapes` (taken at the profile's batch size); the batch dimension
grows with the FLOPs when the estimate is for another micro-batch.
"""

from __future__ import annotations

import math
import re

import numpy as np

from advisor.catalog.schema import Device, Efficiency
from advisor.estimator.roofline import SCATTERS, log_linear
from advisor.profiler.schema import Linear, OpRecord, Profile
from advisor.vocab import DEPTHWISE, DTYPE_BYTES, TRANSPOSED

CONV_FORWARD = ("aten.convolution", "aten._convolution")
BN_FORWARD = (
    "aten.native_batch_norm",
    "aten._native_batch_norm_legit",
    "aten._native_batch_norm_legit_functional",
    "aten.cudnn_batch_norm",
)
BN_BACKWARD = ("aten.native_batch_norm_backward", "aten.cudnn_batch_norm_backward")
CONV_BACKWARD = "aten.convolution_backward"
DIRECT_GATHER_GRAD = "aten.embedding_dense_backward"  # the embedding gradient whose small calls skip the sort
GEMM_2D = ("aten.mm", "aten.addmm")
GEMM_3D = ("aten.bmm", "aten.baddbmm")
_SHAPE = re.compile(r"\[([0-9, ]*)\]|(\d+) tensors \((\d+) elements\)")


def parse_shapes(text: str) -> list[tuple[int, ...]]:
    """The tensor shapes of a record's `shapes` ('[8, 3, 224, 224], [64, 3, 7, 7]'); a tensor list
    ('4 tensors (1024 elements)') counts as one entry of its total elements."""
    out = []
    for dims, _, elements in _SHAPE.findall(text or ""):
        if elements:
            out.append((int(elements),))
        else:
            out.append(tuple(int(d) for d in dims.split(",") if d.strip()))
    return out


def conv_dims(op: OpRecord) -> tuple[int, int, int, int] | None:
    """(input channels, output channels, groups, reduction length Cin/g·kh·kw) of a convolution record."""
    shapes = parse_shapes(op.shapes)
    if op.op in CONV_FORWARD and len(shapes) >= 2:
        x, w = shapes[0], shapes[1]
    elif op.op == CONV_BACKWARD and len(shapes) >= 3:
        x, w = shapes[1], shapes[2]
    else:
        return None
    if len(x) < 3 or len(w) < 3 or not w[1]:
        return None
    if op.transposed:  # weight [C_in, C_out/groups, *k]; the groups show only in a forward call's bias [C_out]
        bias = shapes[2] if op.op in CONV_FORWARD and len(shapes) >= 3 and len(shapes[2]) == 1 else None
        groups = max(1, bias[0] // w[1]) if bias else 1
        return x[1], w[1] * groups, groups, math.prod(w[1:])
    cin, cout = x[1], w[0]
    groups = max(1, cin // w[1])
    return cin, cout, groups, math.prod(w[1:])


def gemm_layout(op: OpRecord) -> str | None:
    """Which of a linear layer's three GEMMs (vocab.GEMM_LAYOUTS) a 2-D matmul record is, for the calibrated
    per-layout caps (`matmul_by_layout`): "weight_grad" where the reduced (inner) dimension is the smallest, as
    gᵀ·x reduces over the batch's rows; else "forward" (x·Wᵀ) in the forward phase and "input_grad" (g·W) in the
    others. The profile keeps logical shapes, not strides, so a forward x·W with an untransposed W reads as x·Wᵀ.
    None for other ops (bmm, convolutions) and shapes that are not two matrices."""
    if op.op not in ("aten.mm", "aten.addmm"):
        return None
    shapes = parse_shapes(op.shapes)
    if op.op == "aten.addmm":
        shapes = shapes[1:]
    if len(shapes) < 2 or len(shapes[0]) != 2 or len(shapes[1]) != 2:
        return None
    (rows, inner), (_, cols) = shapes[0], shapes[1]
    if inner < min(rows, cols):
        return "weight_grad"
    return "forward" if op.phase == "forward" else "input_grad"


def depthwise(op: OpRecord) -> bool:
    """Whether a convolution record is depthwise: one input channel a group, more than one channel."""
    dims = conv_dims(op)
    return dims is not None and dims[0] > 1 and dims[2] == dims[0]


DRAW_CURVE_Q = 0.1  # the draw ops' curves are measured drawing a 1 with probability 0.9: min(p, 1 - p) = 0.1
DRAW_FLOOR = 0.25  # the least a draw's time is taken to fall below its curve's, however lopsided p is


def draw_factor(op: OpRecord, eff: Efficiency) -> float:
    """How much longer a random draw (`Efficiency.draw_half_ratio`'s ops) takes at the record's probability
    than its op curve says (measured at min(p, 1 - p) = DRAW_CURVE_Q): a line through 1 there and through the
    calibrated ratio at one half, never below DRAW_FLOOR; 1 for other ops, draws of unknown probability and
    families that did not measure the ratio."""
    ratio = eff.draw_half_ratio.get(op.op)
    if ratio is None or op.probability is None:
        return 1.0
    q = min(op.probability, 1.0 - op.probability)
    return max(DRAW_FLOOR, 1.0 + (ratio - 1.0) * (q - DRAW_CURVE_Q) / (0.5 - DRAW_CURVE_Q))


def copy_factor(op: OpRecord, eff: Efficiency) -> float:
    """How much longer a copy between two layouts (the record's `copy_run`) takes than a plain copy of its bytes:
    the family's measured ratio (`Efficiency.permuted_copy`) at the record's run, straight on a log scale of runs
    between the measured ones, the first's below them and the last's beyond; 1 for other records and families
    that did not measure it."""
    points = eff.permuted_copy
    if op.copy_run is None or not points:
        return 1.0
    return log_linear([(p.run, p.ratio) for p in points], op.copy_run)


def curve_factor(op: OpRecord, eff: Efficiency) -> float:
    """What a record's memory-bound time is multiplied by (roofline.op_time's `curve_scale`): a draw's at its
    probability (`draw_factor`) and a copy's between layouts (`copy_factor`); a 'strided' record's copy is
    priced apart (`strided_copy_bytes`), its own kernel plainly."""
    factor = draw_factor(op, eff)
    return factor if op.layout == "strided" else factor * copy_factor(op, eff)


def kernel_variant(op: OpRecord, eff: Efficiency) -> str | None:
    """Which of the family's calibrated kernel variants a matrix op reads (roofline.efficiency_source): a GEMM's
    layout (`gemm_layout`) where the family measured per-layout caps, DEPTHWISE for a depthwise convolution where it
    measured depthwise curves, TRANSPOSED for a transposed one where it measured transposed curves; None otherwise."""
    if op.category != "matrix":
        return None
    if op.op in (*CONV_FORWARD, CONV_BACKWARD):
        backward = op.op == CONV_BACKWARD
        if op.transposed:
            has = eff.transposed_backward_by_intensity if backward else eff.transposed_by_intensity
            return TRANSPOSED if has else None
        has = eff.depthwise_backward_by_intensity if backward else eff.depthwise_by_intensity
        return DEPTHWISE if has and depthwise(op) else None
    return gemm_layout(op) if eff.matmul_by_layout else None


def conv_io(op: OpRecord, dims: tuple[int, int, int, int]) -> tuple[float, float]:
    """(input elements, output elements) of one call of a convolution record at the profile's batch; the output
    is taken at the input's spatial size, at the output's channels."""
    shapes = parse_shapes(op.shapes)
    activations = math.prod(shapes[0] if op.op in CONV_FORWARD else shapes[1])
    return activations, activations * dims[1] / max(dims[0], 1)


TENSOR_CORE_DTYPES = ("fp16", "bf16", "tf32")


def channel_multiple(eff: Efficiency, dtype: str) -> int:
    """The channel count a convolution in `dtype` needs for tensor cores: `tensor_core_channels` for 16-bit
    elements, scaled to the same bytes for others (4 for tf32); 0 where the family has no such rule."""
    if not eff.tensor_core_channels:
        return 0
    return max(1, eff.tensor_core_channels * 2 // DTYPE_BYTES.get(dtype, 2))


def tensor_cores(op: OpRecord, eff: Efficiency, dtype: str = "fp16") -> bool:
    """Whether a convolution in a tensor-core dtype runs on tensor cores (every other matrix op does): with
    channels per group a multiple of `channel_multiple`, or, where the library pads channels, any dense
    (ungrouped) one. Grouped and depthwise convolutions with other channel counts keep to the CUDA cores."""
    multiple = channel_multiple(eff, dtype)
    if not multiple or op.op not in (*CONV_FORWARD, CONV_BACKWARD):
        return True
    dims = conv_dims(op)
    if dims is None:
        return True
    cin, cout, groups, _ = dims
    if eff.tensor_core_padding and groups == 1:
        return True
    return (cin // groups) % multiple == 0 and (cout // groups) % multiple == 0


def blocked_channels(cin: int, cout: int, block: int) -> tuple[int, int]:
    """The (input, output) channels a CPU convolution library with channel-blocked layouts computes: output
    channels rounded up to a whole `block`, input channels too when there are more than one block of them (fewer,
    like an image's 3, run on a kernel that reads the plain layout). Measured on oneDNN, AVX-512, 32x32, one thread:
    3x3 layers of 20, 24, 28 and 32 channels in and out all take 2.8-3.2 ms forward, 40 and 48 both 6.3-7.0 ms;
    3 to 12 input channels scale with the count (0.26-0.77 ms into 16), outputs of 3 to 16 cost the same."""

    def up(c: int) -> int:
        return -(-c // block) * block

    return (cin if cin <= block else up(cin)), up(cout)


def channel_padding(op: OpRecord, eff: Efficiency, dtype: str) -> tuple[float, float]:
    """(share of the tensor-core work that is real, bytes the padded copies move over all calls at the profile's
    batch) of a dense tensor-core convolution whose channels the library pads up to `channel_multiple`;
    (1, 0) for every other op (grouped and depthwise ones are not padded: see `tensor_cores`). Input channels C
    padded to Cp and output channels K to Kp leave C·K / (Cp·Kp) of the lanes busy; a padded input is read and
    written again at Cp channels before the kernel, a padded output written at Kp channels and copied back to K
    (the backward pass pads the incoming gradient, the input gradient and the saved input for the weight
    gradient). A CPU family with `conv_channel_block` gets (C·K / (Cp·Kp), 0) for every dense convolution with a
    spatial kernel in any dtype, at `blocked_channels` (its reorders into the blocked layout happen whatever the
    channels, so the calibrated curves already carry their traffic); a 1x1 one gets (1, 0): oneDNN runs it on
    GEMM-like kernels whose time follows the real channels (one thread, 40 channels in at 32x32, batch 8: 8, 16, 24
    and 32 out took 0.15, 0.17, 0.23 and 0.28 ms forward, where 3x3 layers took 1.6 ms for 8-16 and 2.2-2.4 for
    20-32)."""
    if op.op not in (*CONV_FORWARD, CONV_BACKWARD):
        return 1.0, 0.0
    dims = conv_dims(op)
    if dims is None:
        return 1.0, 0.0
    c, k, groups, reduction = dims
    if groups != 1 or c <= 0 or k <= 0:  # grouped: not padded; an edited profile's empty tensor: nothing to pad
        return 1.0, 0.0
    if eff.conv_channel_block:  # a CPU's blocked layouts
        if reduction == c:  # a 1x1 convolution: the library's GEMM-like 1x1 kernels compute channel tails as they are
            return 1.0, 0.0
        cp, kp = blocked_channels(c, k, eff.conv_channel_block)
        return c * k / (cp * kp), 0.0
    multiple = channel_multiple(eff, dtype)
    if not (multiple and eff.tensor_core_padding) or dtype not in TENSOR_CORE_DTYPES:
        return 1.0, 0.0
    cp, kp = -(-c // multiple) * multiple, -(-k // multiple) * multiple
    if (cp, kp) == (c, k):
        return 1.0, 0.0
    width = DTYPE_BYTES.get(dtype, 2)
    activations, out = conv_io(op, dims)
    x_copy = activations * (1 + cp / c) if cp != c else 0.0  # read at C, written at Cp
    y_copy = out * (1 + kp / k) if kp != k else 0.0  # written at Kp by the kernel's epilogue, copied back to K
    copies = x_copy + y_copy if op.op in CONV_FORWARD else y_copy + 2 * x_copy
    return (c * k) / (cp * kp), width * copies * op.count


def transpose_bytes(op: OpRecord, eff: Efficiency, dtype: str, batch_scale: float) -> float:
    """Bytes the NCHW <-> NHWC transposes around a tensor-core convolution move (0 when none apply),
    all calls; `batch_scale` is the micro-batch over the profile's batch size."""
    if dtype not in eff.nchw_transpose or op.layout == "channels_last" or not tensor_cores(op, eff, dtype):
        return 0.0
    if op.op not in (*CONV_FORWARD, CONV_BACKWARD):
        return 0.0
    dims = conv_dims(op)
    if dims is None:
        return 0.0
    width = DTYPE_BYTES.get(dtype, 2)
    activations, out = (n * batch_scale for n in conv_io(op, dims))
    if op.op == CONV_BACKWARD:  # the incoming gradient in, the input gradient out, the saved input again
        return 2 * width * (out + 2 * activations) * op.count
    return 2 * width * (activations + out) * op.count


def layout_passes(
    cin: int, cout: int, x: float, y: float, spatial: bool, block: int, width: int, backward: bool, input_grad: bool
) -> list[tuple[float, int, bool]]:
    """oneDNN's reorders of one convolution call on plain NCHW tensors into its channel-blocked layout and back:
    (bytes one pass moves, passes, whether the channels are padded) for the input's and the output's activations
    (`x` and `y` elements, `cin` and `cout` channels, `width` bytes an element). A pass reads one layout and writes
    the other: C·S + Cp·S elements, Cp the channels rounded up to `block`. The forward call brings its input in
    (unless a `spatial` kernel reads fewer channels than a block: oneDNN's first-layer kernels take plain input)
    and its output back; the backward call brings the output gradient in twice (for the input gradient and for the
    weight gradient), the input in once (the weight gradient's, under the same rule) and the input gradient back
    when it is computed (`input_grad`). Read off ONEDNN_VERBOSE on the development VM's EPYC (PyTorch 2.13)."""

    def pass_bytes(channels: int, elements: float) -> float:
        return width * elements * (1.0 + -(-channels // block) * block / channels)

    plain_input = spatial and cin < block
    if backward:
        counts = ((0 if plain_input else 1) + (1 if input_grad else 0), 2)
    else:
        counts = (0 if plain_input else 1, 1)
    passes = []
    for channels, elements, n in ((cin, x, counts[0]), (cout, y, counts[1])):
        if n and channels > 0 and elements > 0:
            passes.append((pass_bytes(channels, elements), n, channels % block != 0))
    return passes


def reorder_passes(op: OpRecord, eff: Efficiency, dtype: str, profile_batch: float) -> list[tuple[float, int, bool]]:
    """`layout_passes` of one call of a convolution record at the profile's batch (`profile_batch`); [] where none
    apply: a family without measured reorders (`conv_reorder`, `conv_channel_block`), a record that is not a plain
    or depthwise convolution on NCHW tensors (channels-last layers run on NHWC kernels; transposed ones keep their
    reorders in their own curves), or shapes that do not say. The forward call's output size comes from its FLOPs
    (2 x output elements x Cin/g·kh·kw, plus the bias's adds); the backward call computes the input gradient where
    its FLOPs hold two convolutions' worth (profiler/formulas.convolution_backward)."""
    if not (eff.conv_reorder and eff.conv_channel_block) or op.layout == "channels_last" or op.transposed:
        return []
    backward = op.op == CONV_BACKWARD
    if not backward and op.op not in CONV_FORWARD:
        return []
    dims = conv_dims(op)
    if dims is None:
        return []
    cin, cout, _, reduction = dims
    shapes = parse_shapes(op.shapes)
    f_call = op.flops.at(profile_batch) / max(op.count, 1)
    if backward:
        y, x, weight = math.prod(shapes[0]), math.prod(shapes[1]), shapes[2]
        input_grad = f_call >= 1.5 * 2.0 * y * reduction
    else:
        x, weight = math.prod(shapes[0]), shapes[1]
        bias = len(shapes) >= 3 and len(shapes[2]) == 1
        y, input_grad = f_call / (2.0 * reduction + (1.0 if bias else 0.0)), False
    spatial = math.prod(weight[2:]) > 1
    width = DTYPE_BYTES.get(dtype, 4)
    return layout_passes(cin, cout, x, y, spatial, eff.conv_channel_block, width, backward, input_grad)


# PyTorch's CPU backend choice for an fp32 convolution (aten/src/ATen/native/ConvUtils.h, use_mkldnn): a 1x1 layer
# without stride, dilation or padding runs on oneDNN only from this many samples in the call or from two threads;
# below, on one thread, on the native kernel (slow_conv2d, slow_conv3d), which multiplies each sample's activations by
# the weight as one GEMM (no im2col for a 1x1 layer) with no layout reorders and no oneDNN primitive set-up
NATIVE_CONV_BATCH = 16


def native_conv(
    op: OpRecord, eff: Efficiency, dtype: str, profile_batch: float
) -> tuple[int, int, int, float, bool, bool] | None:
    """A convolution record PyTorch hands to its native kernel on this family below NATIVE_CONV_BATCH samples a
    call: (input channels, output channels, spatial elements of one sample, samples of one call at the profile's
    batch, whether a forward call adds a bias, whether a backward call computes the input gradient); None for every
    other record. It applies to a CPU family whose convolutions run on oneDNN (`conv_channel_block`) calibrated at
    one thread (`calibration_threads`; a datasheet CPU is taken at all its threads), to fp32, ungrouped,
    untransposed, NCHW records of a 1x1 kernel whose output keeps the input's spatial size (no stride or padding).
    Grouped 1x1 layers, channels-last ones and the batch-1 rule for small 3x3 layers stay on the oneDNN curves."""
    if not eff.conv_channel_block or eff.calibration_threads != 1 or dtype != "fp32":
        return None
    if op.transposed or op.layout == "channels_last" or op.op not in (*CONV_FORWARD, CONV_BACKWARD):
        return None
    dims = conv_dims(op)
    if dims is None or dims[2] != 1 or dims[3] != dims[0]:  # grouped, or a kernel wider than 1x1
        return None
    cin, cout = dims[0], dims[1]
    shapes = parse_shapes(op.shapes)
    f_call = op.flops.at(profile_batch) / max(op.count, 1)
    if op.op == CONV_BACKWARD:  # the input gradient, where computed, doubles the weight gradient's FLOPs
        y, x = shapes[0], shapes[1]
        if len(x) < 3 or y[2:] != x[2:] or not x[0]:
            return None
        return cin, cout, math.prod(x[2:]), float(x[0]), False, f_call >= 1.5 * 2.0 * math.prod(y) * cin
    x = shapes[0]
    if len(x) < 3 or not x[0]:
        return None
    spatial = math.prod(x[2:])
    bias = len(shapes) >= 3 and len(shapes[2]) == 1
    out = f_call / (2.0 * cin + (1.0 if bias else 0.0)) / (x[0] * cout)  # output elements of one sample and channel
    if abs(out - spatial) > 0.01 * spatial:  # strided or padded
        return None
    return cin, cout, spatial, float(x[0]), bias, False


def native_gemms(op: OpRecord, eff: Efficiency, dtype: str, batch: float, profile_batch: float) -> list[OpRecord]:
    """The per-sample GEMMs the native kernel runs for a `native_conv` record at micro-batch `batch`, as GEMM
    records whose totals over their calls hold at `batch` (per-sample figures, so a GEMM's fresh output and bias
    passes apply as to any other): a forward call, per sample, W[Cout x Cin] · x[Cin x S] into an output first filled
    with the bias (an addmm; an mm without bias); a backward call Wᵀ · g[Cout x S] for the input gradient where it
    computes one, and g · xᵀ [Cout x S by S x Cin] accumulated into the weight gradient. [] where the record runs on
    oneDNN: not native, or NATIVE_CONV_BATCH samples a call or more at `batch`."""
    native = native_conv(op, eff, dtype, profile_batch)
    if native is None or batch <= 0:
        return []
    cin, cout, spatial, samples, bias, input_grad = native
    n = samples * batch / profile_batch
    if n >= NATIVE_CONV_BATCH:
        return []
    calls = max(1, round(n)) * op.count

    def gemm(name: str, m: int, k: int, n_: int, shapes: str) -> OpRecord:
        per = calls / batch
        return OpRecord(
            op=name, phase=op.phase, category="matrix", dtype=op.dtype, module=op.module, count=calls,
            flops=Linear(per_sample=2.0 * m * k * n_ * per),
            bytes_read=Linear(per_sample=DTYPE_BYTES.get(op.dtype, 4) * (m * k + k * n_) * per),
            bytes_written=Linear(per_sample=DTYPE_BYTES.get(op.dtype, 4) * m * n_ * per), shapes=shapes,
        )  # fmt: skip

    if op.op != CONV_BACKWARD:
        if bias:
            return [gemm("aten.addmm", cout, cin, spatial, f"[{cout}, {spatial}], [{cout}, {cin}], [{cin}, {spatial}]")]
        return [gemm("aten.mm", cout, cin, spatial, f"[{cout}, {cin}], [{cin}, {spatial}]")]
    out = [gemm("aten.mm", cout, spatial, cin, f"[{cout}, {spatial}], [{spatial}, {cin}]")]
    if input_grad:
        out.insert(0, gemm("aten.mm", cin, cout, spatial, f"[{cin}, {cout}], [{cout}, {spatial}]"))
    return out


def reorder_s(
    passes: list[tuple[float, int, bool]], bandwidth: float, curves: dict, growth: float = 1.0, at=Efficiency.at
) -> float:
    """Seconds of one call's reorder `passes` (`reorder_passes`) with its activations `growth` times their size at
    the profile's batch: each pass at `bandwidth` times the efficiency its reorder curve (`conv_reorder`: aligned or
    padded channels, either standing in for the other) gives at its own bytes; `at` reads a curve."""
    total = 0.0
    for nbytes, n, padded in passes:
        size = nbytes * growth
        total += n * size / (bandwidth * at(reorder_curve(curves, padded), size))
    return total


def reorder_curve(curves: dict, padded: bool):
    """The `conv_reorder` curve of padded or aligned channels, the other standing in where one is missing."""
    return curves.get("padded" if padded else "aligned") or curves.get("aligned" if padded else "padded")


def gemm_dims(op: OpRecord) -> tuple[int, int, int, int] | None:
    """(rows m, reduction length k, columns n, independent problems) of a GEMM record (mm, addmm, bmm,
    baddbmm), from the last two of its shapes; None for other ops or shapes that do not say."""
    shapes = parse_shapes(op.shapes)
    if op.op in GEMM_2D and len(shapes) >= 2 and len(shapes[-2]) == 2 and len(shapes[-1]) == 2:
        (m, k), n, batches = shapes[-2], shapes[-1][1], 1
    elif op.op in GEMM_3D and len(shapes) >= 2 and len(shapes[-2]) == 3 and len(shapes[-1]) == 3:
        (batches, m, k), n = shapes[-2], shapes[-1][2]
    else:
        return None
    return m, k, n, batches


def gemm_unaligned(op: OpRecord, eff: Efficiency, dtype: str) -> bool:
    """Whether a 16-bit GEMM record has a dimension (M, K or N of its operands' shapes) that is not a multiple
    of `channel_multiple`: one of its operands or its output then has a row length off the 16-byte grid. M
    counts too, as it is the contiguous dimension of a transposed operand (a weight gradient's incoming
    gradient); a token count that happens to be odd at the profile's batch makes a forward GEMM count as
    unaligned although its operands are not (rare: batches and sequence lengths are even)."""
    if dtype not in ("fp16", "bf16") or not eff.unaligned_gemm_flops_per_clock:
        return False
    multiple = channel_multiple(eff, dtype)
    if not multiple:
        return False
    dims = gemm_dims(op)
    return dims is not None and any(d % multiple for d in dims[:3] if d > 0)


def unaligned_cap(device: Device, eff: Efficiency) -> float:
    """FLOP/s an unaligned 16-bit GEMM reaches at most on `device` (see `gemm_unaligned`); 0 where the device
    or its family lacks the figures (no limit)."""
    if not (eff.unaligned_gemm_flops_per_clock and device.sm_count and device.boost_clock):
        return 0.0
    return eff.unaligned_gemm_flops_per_clock * device.sm_count * device.boost_clock


def wave_dims(op: OpRecord) -> tuple[int, int, int] | None:
    """(output columns n, reduction length k, independent problems) of a GEMM or implicit-GEMM convolution
    record, from its shapes; None for other ops or shapes that do not say."""
    gemm = gemm_dims(op)
    if gemm is not None:
        _, k, n, batches = gemm
    elif op.op in CONV_FORWARD and conv_dims(op) is not None:
        _, cout, groups, k = conv_dims(op)
        n, batches = cout // groups, groups
    else:
        return None
    return (n, k, batches) if n and k else None


def wave_efficiency(op: OpRecord, device: Device, eff: Efficiency, flops_per_call: float) -> float:
    """Share of the tile slots that hold work over all waves, tiles / (waves · slots), for a GEMM or an
    implicit-GEMM convolution of `flops_per_call`; the rows M follow from the FLOPs, so the figure holds
    at any micro-batch."""
    if not eff.gemm_tile or not device.sm_count or flops_per_call <= 0:
        return 1.0
    tm, tn = eff.gemm_tile
    dims = wave_dims(op)
    if dims is None:
        return 1.0
    n, k, batches = dims
    m = max(1, round(flops_per_call / (2.0 * batches * n * k)))
    slots = device.sm_count * max(1, eff.tiles_per_sm or 1)
    return float(wave_share(m, n, k, batches, (tm, tn), slots, op.op not in CONV_FORWARD))


def wave_share(m, n, k, batches, tile: tuple[int, int], slots: float, split=True):
    """tiles / (waves · slots) of GEMMs of m x k by k x n (scalars or numpy arrays). Where the output has fewer
    tiles than the device has slots and the reduction is long (a weight gradient: k = the tokens), the library
    splits k across the idle multiprocessors and adds the partial tiles after (split-K, CUTLASS's "Split-K" and
    cuBLAS's heuristics for small-M/N, large-K problems): splits = the slots the tiles leave idle, each keeping a
    reduction of at least the tile's longer side, so the partial sums it writes stay small against its loads.
    `split` False (a scalar or an array): a kernel that does not split (an implicit-GEMM convolution)."""
    tm, tn = tile
    tiles = np.ceil(m / tm) * np.ceil(n / tn) * batches
    splits = np.maximum(1.0, np.minimum(np.floor(slots / tiles), np.floor(k / max(tm, tn))))
    tiles = tiles * np.where(split, splits, 1.0)
    waves = np.ceil(tiles / slots)
    return tiles / (waves * slots)


def channel_blocks(op: OpRecord, rule, dtype: str) -> tuple[float, float, float, float] | None:
    """(elements per channel per sample, channels, bytes of a channel's tensors per element, elements per block
    and clock) of a training batch-norm record on an NCHW tensor that `rule` (Efficiency.batch_norm_nchw) covers;
    None for other records. Whether a call runs this way depends on its micro-batch (`channel_block_s`)."""
    if rule is None or op.layout == "channels_last" or op.op not in (*BN_FORWARD, *BN_BACKWARD):
        return None
    shapes = parse_shapes(op.shapes)
    if not shapes or len(shapes[0]) < 3:
        return None
    x = shapes[0]
    backward = op.op in BN_BACKWARD
    tensors = 2 if backward else 1  # backward: the input and its gradient; forward: the input
    rate = rule.backward_per_clock if backward else rule.forward_per_clock
    return float(math.prod(x[2:])), float(x[1]), tensors * DTYPE_BYTES.get(dtype, 4), rate


def channel_block_s(op: OpRecord, device: Device, rule, dtype: str, micro: float) -> float:
    """Seconds of one call of a batch-norm record at micro-batch `micro` on cuDNN's one-block-per-channel kernels
    (0 where they do not apply): a channel's N·H·W elements over one block's rate at the boost clock, times the
    waves when the channels outnumber sm_count x blocks_per_sm (taken as a fraction: resident blocks of
    different sizes blur the tail)."""
    blocks = channel_blocks(op, rule, dtype)
    if blocks is None or not (device.sm_count and device.boost_clock):
        return 0.0
    spatial, channels, width, rate = blocks
    elements = spatial * micro
    if elements * width <= rule.channel_bytes_max:
        return 0.0
    waves = max(1.0, channels / (device.sm_count * rule.blocks_per_sm))
    return elements * waves / (rate * device.boost_clock)


def channel_block_work(op: OpRecord, device: Device, rule, batch: float) -> tuple[str, float] | None:
    """(phase, elements x waves over all calls) of a batch-norm record on the one-block-per-channel kernels at
    micro-batch `batch`, in the record's own dtype: seconds x elements per clock x clock (benchmarks/bn_kernels.py
    fits the rates with it); None where the kernels do not run."""
    seconds = channel_block_s(op, device, rule, op.dtype, batch)
    if not seconds:
        return None
    backward = op.op in BN_BACKWARD
    rate = rule.backward_per_clock if backward else rule.forward_per_clock
    return ("backward" if backward else "forward", seconds * rate * device.boost_clock * op.count)


GATHER_OPS = ("aten.embedding",)


def strided_copy_bytes(op: OpRecord, dtype: str, profile_batch: float, eff: Efficiency | None = None) -> float:
    """Bytes per sample, over all calls, of the copy a record makes of its non-contiguous first input before its
    kernel runs (layout 'strided': the embedding gradient of a column slice, a LayerNorm over a permuted tensor,
    which PyTorch's kernels make contiguous first): a tensor of the first input's shape read and written once, in
    `dtype`, as many bytes of a plain copy as take its time (times `copy_factor` with the family `eff`: a
    permuted input's copy runs slower than a plain one of its bytes); 0 for other records."""
    if op.layout != "strided" or not profile_batch:
        return 0.0
    shapes = parse_shapes(op.shapes)
    if not shapes or not shapes[0]:
        return 0.0
    factor = copy_factor(op, eff) if eff is not None else 1.0
    return 2.0 * math.prod(shapes[0]) * DTYPE_BYTES.get(dtype, 4) * op.count / profile_batch * factor


def bias_bytes(op: OpRecord, eff: Efficiency, scale: float = 1.0) -> float:
    """Bytes per sample, over all calls, of a CPU linear layer's bias passes (Efficiency.gemm_bias_passes): an addmm
    record's output written that many times more, `scale` its bytes in the dtype it runs in; 0 for other records
    and without the figure."""
    if op.op != "aten.addmm" or not eff.gemm_bias_passes:
        return 0.0
    return eff.gemm_bias_passes * op.bytes_written.per_sample * scale


GEMMS = ("aten.mm", "aten.bmm", "aten.addmm", "aten.baddbmm")


def output_bytes(op: OpRecord, eff: Efficiency, scale: float = 1.0) -> float:
    """Bytes per sample, over all calls, of a CPU GEMM's fresh output (Efficiency.gemm_output_passes): a GEMM
    record's per-sample output written that many times more, `scale` its bytes in the dtype it runs in; 0 for other
    records, for the optimizer's, and without the figure."""
    if op.op not in GEMMS or op.phase == "optimizer" or not eff.gemm_output_passes:
        return 0.0
    return eff.gemm_output_passes * op.bytes_written.per_sample * scale


def gather_blocks_per_byte(op: OpRecord, rule, dtype: str) -> float:
    """Thread blocks per byte a lookup record writes, under `rule` (Efficiency.row_gather): each output row of
    width w bytes (the table's last dimension in `dtype`) takes ceil(w / bytes_per_block) blocks; 0 for other
    records or without a rule."""
    if rule is None or op.op not in GATHER_OPS:
        return 0.0
    shapes = parse_shapes(op.shapes)
    if not shapes or not shapes[0]:
        return 0.0
    row = shapes[0][-1] * DTYPE_BYTES.get(dtype, 4)
    return math.ceil(row / rule.bytes_per_block) / row if row > 0 else 0.0


def block_seconds(device: Device, rule) -> float:
    """Seconds the whole device takes per row-gather block: sm_clocks_per_block over sm_count multiprocessors
    at the boost clock (0 without a rule or those figures)."""
    if rule is None or not (device.sm_count and device.boost_clock):
        return 0.0
    return rule.sm_clocks_per_block / (device.sm_count * device.boost_clock)


def row_gather_s(op: OpRecord, device: Device, rule, dtype: str, written: float) -> float:
    """Least seconds of one call of a lookup record that writes `written` bytes (in `dtype`): its blocks
    (`gather_blocks_per_byte`) at the device's block rate (`block_seconds`); 0 where no rule applies."""
    return written * gather_blocks_per_byte(op, rule, dtype) * block_seconds(device, rule)


def sorted_indices(op: OpRecord, rule, profile_batch: float) -> float:
    """Indices per sample, over all its calls, that an embedding-gradient record sorts under `rule`
    (Efficiency.index_sort): its index tensor (the record's second shape, at the profile's batch) grows with the
    batch; 0 for other records or without a rule."""
    if rule is None or op.op not in SCATTERS or not profile_batch:
        return 0.0
    shapes = parse_shapes(op.shapes)
    if len(shapes) < 2:
        return 0.0
    return math.prod(shapes[1]) * op.count / profile_batch


def sort_threshold(op: OpRecord, rule) -> float:
    """Indices per call up to which the record runs without sorting (`IndexSort.direct_max_indices`)."""
    return float(rule.direct_max_indices) if rule is not None and op.op == DIRECT_GATHER_GRAD else 0.0


def index_sort_cost(op: OpRecord, rule, micro: float, profile_batch: float) -> tuple[float, float]:
    """(bytes, kernels) over all calls that sorting an embedding gradient's indices adds at micro-batch `micro`:
    IndexSort.bytes_per_index per index and IndexSort.kernels per call, where a call sorts (more indices than
    `sort_threshold`); (0, 0) otherwise."""
    indices = sorted_indices(op, rule, profile_batch) * micro
    if indices <= 0 or indices / max(op.count, 1) <= sort_threshold(op, rule):
        return 0.0, 0.0
    return rule.bytes_per_index * indices, float(rule.kernels * op.count)


def channels_last(profile: Profile) -> bool:
    """Whether a profile's convolutions run on NHWC tensors: its batch norms then do too (they keep their input's
    memory format), and cuDNN runs them on its NHWC kernels at about the memory rate, not one block per channel.
    Profiles record the layout of convolutions only."""
    return any(op.layout == "channels_last" for op in profile.ops)
