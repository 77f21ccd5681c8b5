"""Every registered op formula against its hand derivation (the arithmetic is beside each expected value).

Ops run on meta tensors under the Counter, so the dispatch path is tested too; the few ops that need a GPU
(cuDNN) are checked by calling their formula on a hand-built call.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from advisor.profiler import formulas_pointwise as pw
from advisor.profiler.counter import Counter
from advisor.profiler.registry import Call, formula, registered

aten = torch.ops.aten
M = "meta"


def meta(*shape, dtype=torch.float32, grad=False):
    return torch.empty(*shape, device=M, dtype=dtype, requires_grad=grad)


def flops(fn, backward: bool = False) -> dict[str, float]:
    """FLOPs per aten op of `fn()` (and of its backward when asked), summed over calls."""
    c = Counter()
    with c:
        out = fn()
        if backward:
            c.flush()
            c.phase = "backward"
            (out[0] if isinstance(out, tuple) else out).sum().backward()
    totals: dict[str, float] = {}
    keys = list(c.keys)
    for index, f, _, _ in c.calls:
        name = keys[index][0]
        totals[name] = totals.get(name, 0.0) + f
    return totals


def only(fn, name: str) -> float:
    return flops(fn)[name]


COVERED: set[str] = set()


def covers(*names):
    COVERED.update(f"aten.{n}" for n in names)


# ---- matmul family ----
covers("mm", "addmm", "bmm", "baddbmm", "mv", "addmv", "dot", "vdot", "_addmm_activation")


def test_matmul_family():
    assert only(lambda: aten.mm(meta(3, 4), meta(4, 5)), "aten.mm") == 120  # 2*3*4*5
    assert only(lambda: aten.addmm(meta(5), meta(3, 4), meta(4, 5)), "aten.addmm") == 135  # 2*3*4*5 + 3*5
    assert only(lambda: aten.bmm(meta(2, 3, 4), meta(2, 4, 5)), "aten.bmm") == 240  # 2*2*3*4*5
    assert only(lambda: aten.baddbmm(meta(2, 3, 5), meta(2, 3, 4), meta(2, 4, 5)), "aten.baddbmm") == 270  # +2*3*5
    assert only(lambda: aten.mv(meta(3, 4), meta(4)), "aten.mv") == 24  # 2*3*4
    assert only(lambda: aten.addmv(meta(3), meta(3, 4), meta(4)), "aten.addmv") == 27  # 2*3*4 + 3
    assert only(lambda: aten.dot(meta(7), meta(7)), "aten.dot") == 14  # 2*7
    assert only(lambda: aten.vdot(meta(7), meta(7)), "aten.vdot") == 14  # 2*7
    relu = only(lambda: aten._addmm_activation(meta(5), meta(3, 4), meta(4, 5)), "aten._addmm_activation")
    assert relu == 150  # 2*3*4*5 + 15 (bias) + 15 (relu)
    gelu = only(
        lambda: aten._addmm_activation(meta(5), meta(3, 4), meta(4, 5), use_gelu=True), "aten._addmm_activation"
    )
    assert gelu == 270  # 120 + 15 + 9*15 (tanh-gelu, 9 per element)


def test_linear_and_matmul_decompose_to_counted_ops():
    # F.linear / @ reach the dispatcher as addmm / mm / bmm: 2*8*16*32 + 8*32 = 8448
    assert sum(flops(lambda: F.linear(meta(8, 16), meta(32, 16), meta(32))).values()) == 8448
    assert sum(flops(lambda: meta(2, 3, 4) @ meta(2, 4, 5)).values()) == 240  # 2*2*3*4*5


# ---- convolution ----
covers("convolution", "_convolution", "convolution_backward")


def conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1, transposed=False):
    n = x.dim() - 2
    return aten.convolution(x, w, b, [stride] * n, [padding] * n, [dilation] * n, transposed, [0] * n, groups)


def test_convolution_forward():
    # 3x3, 8->16 channels, 10x10 -> 8x8: 2 * N*H'W' * weight.numel() = 2 * 2*64 * (16*8*9) = 294912
    assert only(lambda: conv(meta(2, 8, 10, 10), meta(16, 8, 3, 3)), "aten.convolution") == 294912
    # with a bias: + one add per output element 2*16*8*8 = 2048
    assert only(lambda: conv(meta(2, 8, 10, 10), meta(16, 8, 3, 3), meta(16)), "aten.convolution") == 296960
    # grouped (4 groups): weight 16x2x3x3 = 288: 2 * 128 * 288 = 73728
    assert only(lambda: conv(meta(2, 8, 10, 10), meta(16, 2, 3, 3), groups=4), "aten.convolution") == 73728
    # depthwise 64 ch 3x3 on 56x56, padding 1: 2 * 56*56 * 64*9 = 3612672
    assert (
        only(lambda: conv(meta(1, 64, 56, 56), meta(64, 1, 3, 3), padding=1, groups=64), "aten.convolution") == 3612672
    )
    # stride 2, padding 1: 10x10 -> 5x5: 2 * 2*25 * 1152 = 115200
    assert only(lambda: conv(meta(2, 8, 10, 10), meta(16, 8, 3, 3), stride=2, padding=1), "aten.convolution") == 115200
    # dilation 2: effective 5x5 kernel, 10x10 -> 6x6: 2 * 2*36 * 1152 = 165888
    assert only(lambda: conv(meta(2, 8, 10, 10), meta(16, 8, 3, 3), dilation=2), "aten.convolution") == 165888
    # 1-d: 4->6 channels, k=3, length 10 -> 8: 2 * 1*8 * (6*4*3) = 1152
    assert only(lambda: conv(meta(1, 4, 10), meta(6, 4, 3)), "aten.convolution") == 1152
    # transposed 8->4 channels (weight [8, 4, 2, 2]), stride 2, 5x5 input: 2 * 1*25 * 128 = 6400
    assert only(lambda: conv(meta(1, 8, 5, 5), meta(8, 4, 2, 2), stride=2, transposed=True), "aten.convolution") == 6400


def conv_backward(x, w, stride=1, padding=0, groups=1, mask=(True, True, True)):
    y = conv(x, w, stride=stride, padding=padding, groups=groups)
    return aten.convolution_backward(
        torch.empty_like(y), x, w, [w.shape[0]], [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], groups, list(mask)
    )


def test_convolution_backward():
    # grad_input and grad_weight each 2 * 2*64 * 1152 = 294912; grad_bias 2*16*64 = 2048
    got = only(lambda: conv_backward(meta(2, 8, 10, 10), meta(16, 8, 3, 3)), "aten.convolution_backward")
    assert got == 2 * 294912 + 2048
    got = only(
        lambda: conv_backward(meta(2, 8, 10, 10), meta(16, 8, 3, 3), mask=(False, True, False)),
        "aten.convolution_backward",
    )
    assert got == 294912  # only grad_weight


def test_depthwise_backward_vs_torch_flop_counter():
    # Depthwise 3x3, 64 channels, 56x56, batch 1, padding 1. Real MACs per gradient: 56*56*64*9 = 1806336,
    # so grad_input + grad_weight = 2 * 2 * 1806336 = 7225344 FLOPs (+ grad_bias 56*56*64 = 200704).
    x, w = meta(1, 64, 56, 56), meta(64, 1, 3, 3)
    ours = only(lambda: conv_backward(x, w, padding=1, groups=64), "aten.convolution_backward")
    assert ours == 7225344 + 200704
    from torch.utils.flop_counter import FlopCounterMode

    g = meta(1, 64, 56, 56)
    with FlopCounterMode(display=False) as fc:
        aten.convolution_backward(g, x, w, [64], [1, 1], [1, 1], [1, 1], False, [0, 0], 64, [True, True, False])
    # flop_counter drops `groups` in the backward and counts over 32x the real 7225344 FLOPs
    assert fc.get_total_flops() > 32 * 7225344


# ---- attention ----
ATT = (
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_fused_attention_overrideable",
)
covers(*ATT, *(a + "_backward" for a in ATT))
B, H, S, D = 2, 4, 16, 8
FULL = B * H * S * S  # 2048 pairs
CAUSAL = B * H * S * (S + 1) // 2  # 1088 pairs
FWD_PAIR = 2 * D + 2 * D + 5  # q.k, p.v, softmax = 37
BWD_PAIR = 6 * D + 4 * D + 6  # recompute q.k, dV, dP, dQ, dK, elementwise = 86
FWD_ROWS = B * H * S * D  # final normalisation: 1024
BWD_ROWS = 2 * B * H * S * D  # delta = rowsum(dO * O): 2048


def qkv(dtype=torch.bfloat16, device=M):
    return [torch.randn(B, H, S, D, device=device, dtype=dtype, requires_grad=True) for _ in range(3)]


def test_flash_attention_causal_counts_the_kept_triangle():
    got = flops(lambda: aten._scaled_dot_product_flash_attention(*qkv(), 0.0, True, False)[0], backward=True)
    assert got["aten._scaled_dot_product_flash_attention"] == CAUSAL * FWD_PAIR + FWD_ROWS  # 1088*37 + 1024
    assert got["aten._scaled_dot_product_flash_attention_backward"] == CAUSAL * BWD_PAIR + BWD_ROWS


def test_efficient_attention_full_and_masked():
    fn = lambda: aten._scaled_dot_product_efficient_attention(*qkv(torch.float32), None, True, 0.0, False)[0]  # noqa: E731
    got = flops(fn, backward=True)
    assert got["aten._scaled_dot_product_efficient_attention"] == FULL * FWD_PAIR + FWD_ROWS  # 2048*37 + 1024
    assert got["aten._scaled_dot_product_efficient_attention_backward"] == FULL * BWD_PAIR + BWD_ROWS
    mask = meta(B, H, S, S)  # an explicit mask is computed in full even with is_causal
    fn = lambda: aten._scaled_dot_product_efficient_attention(*qkv(torch.float32), mask, True, 0.0, True)[0]  # noqa: E731
    assert flops(fn)["aten._scaled_dot_product_efficient_attention"] == FULL * FWD_PAIR + FWD_ROWS


def test_cpu_attention_is_counted_and_causal_halves_it():
    q, k, v = qkv(torch.float32, "cpu")
    got = flops(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), backward=True)
    assert got["aten._scaled_dot_product_flash_attention_for_cpu"] == CAUSAL * FWD_PAIR + FWD_ROWS
    assert got["aten._scaled_dot_product_flash_attention_for_cpu_backward"] == CAUSAL * BWD_PAIR + BWD_ROWS
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as fc:
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert fc.get_total_flops() == 0  # flop_counter has no formula for the CPU kernel


def test_causal_vs_torch_flop_counter_on_flash():
    # flop_counter counts the full square (4*B*H*S*S*D = 65536 for q.k and p.v); the kernel computes only the
    # causal triangle: 4*1088*8 = 34816 matmul FLOPs, about half
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as fc:
        aten._scaled_dot_product_flash_attention(*qkv(), 0.0, True, False)
    assert fc.get_total_flops() == 4 * FULL * D
    ours = only(
        lambda: aten._scaled_dot_product_flash_attention(*qkv(), 0.0, True, False)[0],
        "aten._scaled_dot_product_flash_attention",
    )
    assert ours == CAUSAL * FWD_PAIR + FWD_ROWS  # of which matmul 4*1088*8 = 34816, 0.53x flop_counter's
    assert 4 * CAUSAL * D / fc.get_total_flops() == pytest.approx(0.53, abs=0.01)


@pytest.mark.parametrize(
    "name", ["_scaled_dot_product_cudnn_attention", "_scaled_dot_product_fused_attention_overrideable"]
)
def test_other_fused_attention_formulas(name):
    fwd = registered()[f"aten.{name}"].fn
    func = getattr(aten, name).default
    q, k, v = (meta(B, H, S, D) for _ in range(3))
    assert fwd(Call(func, (q, k, v), {"is_causal": True}, None)) == CAUSAL * FWD_PAIR + FWD_ROWS
    bwd = registered()[f"aten.{name}_backward"].fn
    bfunc = getattr(aten, name + "_backward").default
    assert bwd(Call(bfunc, (meta(B, H, S, D), q, k, v), {"is_causal": False}, None)) == FULL * BWD_PAIR + BWD_ROWS


def test_dropout_adds_one_per_pair():
    fn = lambda: aten._scaled_dot_product_flash_attention(*qkv(), 0.1, False, False)[0]  # noqa: E731
    assert only(fn, "aten._scaled_dot_product_flash_attention") == FULL * (FWD_PAIR + 1) + FWD_ROWS


# ---- normalisation, softmax, losses, embedding, pooling, recurrent ----
covers(
    "native_layer_norm",
    "native_layer_norm_backward",
    "native_group_norm",
    "native_group_norm_backward",
    "native_batch_norm",
    "native_batch_norm_backward",
    "_fused_rms_norm",
    "_fused_rms_norm_backward",
    "_softmax",
    "_safe_softmax",
    "_log_softmax",
    "_softmax_backward_data",
    "_log_softmax_backward_data",
    "nll_loss_forward",
    "nll_loss2d_forward",
    "mse_loss",
    "mse_loss_backward",
    "binary_cross_entropy_with_logits",
    "smooth_l1_loss",
    "smooth_l1_loss_backward",
    "index_add",
    "index_add_",
    "scatter_add",
    "scatter_add_",
    "embedding_dense_backward",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "max_pool2d_with_indices_backward",
    "max_pool3d_with_indices_backward",
    "avg_pool2d",
    "avg_pool3d",
    "avg_pool2d_backward",
    "avg_pool3d_backward",
    "_adaptive_avg_pool2d",
    "_adaptive_avg_pool3d",
    "_adaptive_avg_pool2d_backward",
    "_adaptive_avg_pool3d_backward",
    "_thnn_fused_lstm_cell",
    "_cudnn_rnn",
    "_cudnn_rnn_backward",
    "mkldnn_rnn_layer",
    "mkldnn_rnn_layer_backward",
    "_native_batch_norm_legit",
    "_native_batch_norm_legit_functional",
    "_native_batch_norm_legit_no_training",
    "cudnn_batch_norm",
    "miopen_batch_norm",
    "cudnn_batch_norm_backward",
)


def test_layer_norm():
    # 4 rows of 8, affine: per element 5 + 2 = 7 -> 32*7 = 224, per row 4 -> 16: 240
    x, w, b = meta(4, 8, grad=True), meta(8, grad=True), meta(8, grad=True)
    got = flops(lambda: F.layer_norm(x, (8,), w, b), backward=True)
    assert got["aten.native_layer_norm"] == 240
    # backward: grad_input (9 + 1) * 32 = 320, grad_weight 2*32 = 64, grad_bias 32: 416
    assert got["aten.native_layer_norm_backward"] == 416


def test_group_and_batch_norm():
    x = meta(2, 4, 3, 3, grad=True)  # 72 elements
    w, b = meta(4, grad=True), meta(4, grad=True)
    got = flops(lambda: F.group_norm(x, 2, w, b), backward=True)
    assert got["aten.native_group_norm"] == 7 * 72 + 4 * 4  # 2 samples x 2 groups = 4 rows: 520
    assert got["aten.native_group_norm_backward"] == 10 * 72 + 2 * 72 + 72  # 936
    got = flops(lambda: F.batch_norm(x, None, None, w, b, training=True), backward=True)
    assert got["aten.native_batch_norm"] == 7 * 72 + 4 * 4  # 4 channels: 520
    assert got["aten.native_batch_norm_backward"] == 936
    fn = registered()["aten._native_batch_norm_legit_no_training"].fn
    func = aten._native_batch_norm_legit_no_training.default
    assert fn(Call(func, (x, w, b), {}, None)) == 4 * 72  # inference: sub, mul, affine 2 = 288


@pytest.mark.parametrize(
    "name", ["_native_batch_norm_legit", "_native_batch_norm_legit_functional", "cudnn_batch_norm", "miopen_batch_norm"]
)
def test_batch_norm_variants(name):
    x, w, b = meta(2, 4, 3, 3), meta(4), meta(4)
    func = getattr(aten, name).default
    assert registered()[f"aten.{name}"].fn(Call(func, (x, w, b), {"training": True}, None)) == 520  # as above


def test_cudnn_batch_norm_backward():
    x, w = meta(2, 4, 3, 3), meta(4)
    func = aten.cudnn_batch_norm_backward.default
    # (input, grad_output, weight, ...): grad_input only, as cuDNN computes all three: 10*72 + 2*72 + 72 = 936
    assert registered()["aten.cudnn_batch_norm_backward"].fn(Call(func, (meta(2, 4, 3, 3), x, w), {}, None)) == 936


def test_rms_norm_fused():
    x, w = meta(4, 8, grad=True), meta(8, grad=True)
    fn = registered()["aten._fused_rms_norm"].fn
    assert fn(Call(aten._fused_rms_norm.default, (x, [8], w, 1e-6), {}, None)) == 4 * 32 + 3 * 4  # 140
    bwd = registered()["aten._fused_rms_norm_backward"].fn
    func = aten._fused_rms_norm_backward.default
    assert bwd(Call(func, (x, x, [8], meta(4, 1), w, [True, True]), {}, None)) == 9 * 32  # (7 + 2) * 32 = 288


def test_softmax_family():
    x = meta(4, 8, grad=True)
    got = flops(lambda: F.softmax(x, -1), backward=True)
    assert got["aten._softmax"] == 160  # 5 * 32
    assert got["aten._softmax_backward_data"] == 128  # 4 * 32
    got = flops(lambda: F.log_softmax(x, -1), backward=True)
    assert got["aten._log_softmax"] == 160  # 5 * 32
    assert got["aten._log_softmax_backward_data"] == 128  # 4 * 32
    assert only(lambda: aten._safe_softmax(x, -1), "aten._safe_softmax") == 192  # 6 * 32


def test_losses():
    logits, target = meta(4, 10, grad=True), torch.zeros(4, dtype=torch.long, device=M)
    assert flops(lambda: F.cross_entropy(logits, target))["aten.nll_loss_forward"] == 4  # one add per target
    img, t2 = meta(2, 3, 4, 4), torch.zeros(2, 4, 4, dtype=torch.long, device=M)
    assert only(lambda: aten.nll_loss2d_forward(img, t2, None, 1, -100), "aten.nll_loss2d_forward") == 32  # 2*4*4
    a, b = meta(4, 8, grad=True), meta(4, 8)
    got = flops(lambda: F.mse_loss(a, b), backward=True)
    assert got["aten.mse_loss"] == 96  # 3 * 32
    assert got["aten.mse_loss_backward"] == 96  # 3 * 32
    got = flops(lambda: F.binary_cross_entropy_with_logits(a, b), backward=True)
    assert got["aten.binary_cross_entropy_with_logits"] == 448  # 14 * 32
    # its backward is decomposed, g·(σ(x) - y)/N: sigmoid (4 per element: neg, exp, add, reciprocal), sub
    assert got["aten.sigmoid"] == 128 and got["aten.sub"] == 32  # 4 * 32, 1 * 32
    got = flops(lambda: F.smooth_l1_loss(a, b), backward=True)
    assert got["aten.smooth_l1_loss"] == 288  # 9 * 32
    assert got["aten.smooth_l1_loss_backward"] == 192  # 6 * 32


def test_scatter_adds():
    rows, src = torch.zeros(5, 8, device=M), meta(3, 8)
    idx = torch.zeros(3, dtype=torch.long, device=M)
    assert only(lambda: rows.index_add(0, idx, src), "aten.index_add") == 24  # one add per source element, 3 * 8
    assert only(lambda: rows.clone().index_add_(0, idx, src), "aten.index_add_") == 24
    index = torch.zeros(2, 8, dtype=torch.long, device=M)
    assert only(lambda: rows.scatter_add(0, index, src[:2]), "aten.scatter_add") == 16  # 2 * 8
    assert only(lambda: rows.clone().scatter_add_(0, index, src[:2]), "aten.scatter_add_") == 16


def test_embedding_backward():
    table = meta(100, 16, grad=True)
    idx = torch.zeros(4, 8, dtype=torch.long, device=M)
    got = flops(lambda: F.embedding(idx, table), backward=True)
    assert got["aten.embedding"] == 0  # a gather
    assert got["aten.embedding_dense_backward"] == 512  # one add per gradient element: 4*8*16


def test_pooling():
    x = meta(1, 2, 8, 8, grad=True)
    got = flops(lambda: F.max_pool2d(x, 2), backward=True)
    assert got["aten.max_pool2d_with_indices"] == 128  # 32 outputs x 4 comparisons
    assert got["aten.max_pool2d_with_indices_backward"] == 32  # one add per output gradient
    got = flops(lambda: F.avg_pool2d(x, 2), backward=True)
    assert got["aten.avg_pool2d"] == 160  # 32 outputs x (4 adds + 1 divide)
    assert got["aten.avg_pool2d_backward"] == 160  # 32 gradients x (1 divide + 4 adds)
    got = flops(lambda: aten._adaptive_avg_pool2d(x, [2, 2]), backward=True)
    assert got["aten._adaptive_avg_pool2d"] == 136  # 128 inputs + 8 outputs
    assert got["aten._adaptive_avg_pool2d_backward"] == 128  # one per input element
    x3 = meta(1, 2, 4, 4, 4, grad=True)
    got = flops(lambda: F.max_pool3d(x3, 2), backward=True)
    assert got["aten.max_pool3d_with_indices"] == 128  # 16 outputs x 8 comparisons
    assert got["aten.max_pool3d_with_indices_backward"] == 16
    got = flops(lambda: F.avg_pool3d(x3, 2), backward=True)
    assert got["aten.avg_pool3d"] == 144  # 16 x (8 + 1)
    assert got["aten.avg_pool3d_backward"] == 144
    got = flops(lambda: aten._adaptive_avg_pool3d(x3, [2, 2, 2]), backward=True)
    assert got["aten._adaptive_avg_pool3d"] == 144  # 128 + 16
    assert got["aten._adaptive_avg_pool3d_backward"] == 128


def test_lstm_on_cpu_and_on_meta():
    # one layer, input 8, hidden 16, batch 2, 3 steps: gate matmuls 2*2*(8+16)*64 = 6144 per step, x3 = 18432;
    # elementwise 30 per unit: 30 * 3*2 * 16 = 2880. Backward: twice each = 42624.
    lstm = torch.nn.LSTM(8, 16, batch_first=True)
    got = flops(lambda: lstm(torch.randn(2, 3, 8, requires_grad=True))[0], backward=True)
    assert got["aten.mkldnn_rnn_layer"] == 18432 + 2880
    assert got["aten.mkldnn_rnn_layer_backward"] == 2 * (18432 + 2880)
    # on meta the LSTM decomposes into per-step addmm (bias) and cell ops: 3 steps x 2 addmm of
    # 2*2*8*64 + 128 and 2*2*16*64 + 128 = 2176 + 4224
    with torch.device(M):
        lstm = torch.nn.LSTM(8, 16, batch_first=True)
    got = flops(lambda: lstm(meta(2, 3, 8))[0])
    assert got["aten.addmm"] == 3 * (2176 + 4224)
    assert got["aten.sigmoid_"] == 3 * 3 * 4 * 32  # 3 steps x 3 gates x 4 FLOPs x 32 units


def test_recurrent_kernels():
    cell = registered()["aten._thnn_fused_lstm_cell"].fn
    func = aten._thnn_fused_lstm_cell.default
    gates, cx = meta(2, 64), meta(2, 16)
    assert cell(Call(func, (gates, gates, cx, meta(64), meta(64)), {}, None)) == 30 * 32  # 30 per unit, 32 units
    assert cell(Call(func, (gates, gates, cx), {}, None)) == 22 * 32  # without biases
    rnn = registered()["aten._cudnn_rnn"].fn
    x, hx = meta(5, 2, 8), meta(1, 2, 16)  # T=5, B=2, I=8, H=16, one LSTM layer (mode 2)
    weights = [meta(64, 8), meta(64, 16), meta(64), meta(64)]
    args = (x, weights, 4, None, hx, hx, 2, 16, 0, 1, False, 0.0, True, False, [], None)
    # matmul 2*T*B*(64*8 + 64*16) = 2*10*1536 = 30720; elementwise 30 * 10 * 16 = 4800
    assert rnn(Call(aten._cudnn_rnn.default, args, {}, None)) == 30720 + 4800
    back = registered()["aten._cudnn_rnn_backward"].fn
    assert back(Call(aten._cudnn_rnn_backward.default, (x, weights, 4, None, hx, hx), {"mode": 2}, None)) == (
        2 * 30720 + 2 * 4800
    )


# ---- pointwise, reductions, optimizer, memory ----


@pytest.mark.parametrize("cost,name", [(c, n) for c, ns in pw.POINTWISE.items() for n in ns])
def test_pointwise_table(cost, name):
    # a pointwise op costs its per-element FLOPs (the table's derivation) times its 6 output elements
    out = meta(2, 3)
    assert registered()[f"aten.{name}"].fn(Call(None, (out,), {}, out)) == 6 * cost


def test_pointwise_dispatch_examples():
    x = meta(2, 3, grad=True)
    assert only(lambda: x + x, "aten.add") == 6  # 1 per element
    assert only(lambda: torch.sigmoid(x), "aten.sigmoid") == 24  # 4 per element
    got = flops(lambda: F.silu(x), backward=True)
    assert got["aten.silu"] == 30 and got["aten.silu_backward"] == 54  # 5 and 9 per element
    got = flops(lambda: F.gelu(x), backward=True)
    assert got["aten.gelu"] == 30 and got["aten.gelu_backward"] == 66  # 5 and 11 per element
    got = flops(lambda: F.gelu(x, approximate="tanh"), backward=True)
    assert got["aten.gelu"] == 54 and got["aten.gelu_backward"] == 114  # 9 and 19 per element
    covers("gelu", "gelu_", "gelu_backward")


@pytest.mark.parametrize("name", sorted(pw.REDUCE_PER_INPUT))
def test_reduction_table(name):
    x, out = meta(4, 5), meta(4)
    expected = 20 * pw.REDUCE_PER_INPUT[name] + 4 * pw.REDUCE_PER_OUTPUT.get(name, 0)  # per input + per output
    assert registered()[f"aten.{name}"].fn(Call(None, (x,), {}, out)) == expected


def test_reduction_dispatch():
    x = meta(4, 5)
    assert only(lambda: x.sum(), "aten.sum") == 20  # 20 adds
    assert only(lambda: x.mean(-1), "aten.mean") == 24  # 20 adds + 4 divides
    assert only(lambda: x.var(-1), "aten.var") == 84  # 4*20 + 1*4


@pytest.mark.parametrize("cost,name", [(c, n) for c, ns in pw.FOREACH.items() for n in ns])
def test_foreach_table(cost, name):
    xs = [meta(2, 3), meta(4)]  # 10 elements
    assert registered()[f"aten._foreach_{name}"].fn(Call(None, (xs,), {}, None)) == 10 * cost


def test_fused_optimizers():
    ps = [meta(2, 3), meta(4)]  # 10 elements
    adamw = registered()["aten._fused_adamw_"].fn
    assert adamw(Call(aten._fused_adamw_.default, (ps,), {"weight_decay": 0.01}, None)) == 140  # 14 * 10
    adam = registered()["aten._fused_adam_"].fn
    assert adam(Call(aten._fused_adam_.default, (ps,), {"weight_decay": 0.0}, None)) == 130  # 13 * 10
    assert adam(Call(aten._fused_adam_.default, (ps,), {"weight_decay": 0.1}, None)) == 150  # (13 + 2) * 10
    sgd = registered()["aten._fused_sgd_"].fn
    assert sgd(Call(aten._fused_sgd_.default, (ps,), {"momentum": 0.9, "weight_decay": 0.0}, None)) == 40  # 4*10
    assert sgd(Call(aten._fused_sgd_.default, (ps,), {"momentum": 0.0, "weight_decay": 0.1}, None)) == 40  # 2+2
    covers("_fused_adamw_", "_fused_adam_", "_fused_adamw", "_fused_adam", "_fused_sgd_", "_fused_sgd")


def test_adamw_step_counts_14_per_parameter():
    # the per-tensor AdamW path: mul_ 1, lerp_ 3, mul_ 1, addcmul_ 3, sqrt 1, div 1, add_ 1, addcdiv_ 3 = 14
    p = torch.nn.Parameter(meta(10, 10))
    p.grad = meta(10, 10)
    opt = torch.optim.AdamW([p], foreach=False)
    got = flops(opt.step)
    assert 1400 <= sum(got.values()) <= 1402  # 14 * 100, plus `step += 1` on the 0-d step counter


@pytest.mark.parametrize("name", pw.MEMORY_OPS)
def test_memory_ops_count_no_flops(name):
    assert registered()[f"aten.{name}"].fn(Call(None, (meta(3),), {}, meta(3))) == 0  # data movement only


def test_every_registered_formula_has_a_test():
    tested = COVERED | {f"aten.{n}" for ns in pw.POINTWISE.values() for n in ns}
    tested |= {f"aten.{n}" for n in pw.REDUCE_PER_INPUT} | {f"aten.{n}" for n in pw.MEMORY_OPS}
    tested |= {f"aten._foreach_{n}" for ns in pw.FOREACH.values() for n in ns}
    tested |= {"aten.gelu", "aten.gelu_", "aten.gelu_backward"}
    missing = sorted(set(registered()) - tested)
    assert not missing, missing


def test_registering_twice_is_an_error():
    with pytest.raises(ValueError) as info:
        formula("aten.mm", category="matrix")(lambda c: 0.0)
    assert "registered twice" in str(info.value)
