"""FLOP formulas of the ops that run on matrix units: the matmul family, convolutions and fused attention.

Real FLOPs: a multiply-add is 2. Derivations are beside each formula; tests/test_profiler_formulas.py checks
each against the hand arithmetic (and, where torch.utils.flop_counter disagrees, shows why).
"""

from __future__ import annotations

import math

from advisor.profiler.registry import Call, formula

GELU_TANH = 9  # 0.5*x*(1+tanh(c*(x+0.044715*x^3))): x*x, *x, *0.044715, +x, *c, tanh, +1, *x, *0.5


@formula("aten.mm", category="matrix")
def mm(c: Call) -> float:
    # [m, k] @ [k, n]: m*n outputs, each k multiply-adds
    a, b = c.args[0], c.args[1]
    return 2.0 * a.shape[0] * a.shape[1] * b.shape[1]


@formula("aten.addmm", category="matrix")
def addmm(c: Call) -> float:
    # bias + [m, k] @ [k, n]: 2mkn, plus one add per output (the bias); alpha/beta scaling is ignored
    a, b = c.args[1], c.args[2]
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    return 2.0 * m * k * n + m * n


@formula("aten._addmm_activation", category="matrix")
def addmm_activation(c: Call) -> float:
    # addmm followed by relu (1 per output) or tanh-gelu (GELU_TANH per output, see formulas_pointwise)
    a, b = c.args[1], c.args[2]
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    act = GELU_TANH if c.arg("use_gelu", False) else 1
    return 2.0 * m * k * n + m * n + act * m * n


@formula("aten.bmm", category="matrix")
def bmm(c: Call) -> float:
    # batch of [m, k] @ [k, n]
    a, b = c.args[0], c.args[1]
    return 2.0 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]


@formula("aten.baddbmm", category="matrix")
def baddbmm(c: Call) -> float:
    a, b = c.args[1], c.args[2]
    bs, m, k, n = a.shape[0], a.shape[1], a.shape[2], b.shape[2]
    return 2.0 * bs * m * k * n + bs * m * n


@formula("aten.mv", category="matrix")
def mv(c: Call) -> float:
    a = c.args[0]
    return 2.0 * a.shape[0] * a.shape[1]


@formula("aten.addmv", category="matrix")
def addmv(c: Call) -> float:
    a = c.args[1]
    return 2.0 * a.shape[0] * a.shape[1] + a.shape[0]


@formula("aten.dot", "aten.vdot", category="matrix")
def dot(c: Call) -> float:
    return 2.0 * c.args[0].shape[0]


# ---- convolution ----
# weight is [C_out, C_in/groups, *k]. Each output element (n, c_out, position) does (C_in/groups)*prod(k)
# multiply-adds, so a normal convolution does N * prod(out_spatial) * C_out * (C_in/groups) * prod(k)
# = N * prod(out_spatial) * weight.numel() MACs. A transposed convolution (weight [C_in, C_out/groups, *k])
# is the gradient of a normal one: N * prod(in_spatial) * weight.numel(). Groups and depthwise live in
# weight.numel(); stride, dilation and padding in the output size (padded positions are computed too).


def _conv_macs(x_shape, w_shape, y_shape, transposed: bool) -> float:
    spatial = x_shape[2:] if transposed else y_shape[2:]
    return float(x_shape[0]) * math.prod(spatial) * math.prod(w_shape)


@formula("aten.convolution", "aten._convolution", category="matrix")
def convolution(c: Call) -> float:
    x, w, bias, out = c.args[0], c.args[1], c.args[2], c.out
    transposed = bool(c.arg("transposed", False))
    flops = 2.0 * _conv_macs(x.shape, w.shape, out.shape, transposed)
    if bias is not None:  # one add per output element
        flops += out.numel()
    return flops


@formula("aten.convolution_backward", category="matrix")
def convolution_backward(c: Call) -> float:
    # grad_input is a (transposed) convolution of grad_output with the same MACs as the forward; so is
    # grad_weight (a correlation of input with grad_output). grad_bias sums grad_output: one add per element.
    # torch.utils.flop_counter drops `groups` here, overcounting a depthwise conv's backward by C_in times.
    grad_out, x, w = c.args[0], c.args[1], c.args[2]
    transposed = bool(c.arg("transposed", False))
    mask = c.arg("output_mask", [True, True, True])
    macs = _conv_macs(x.shape, w.shape, grad_out.shape, transposed)
    flops = 0.0
    if mask[0]:
        flops += 2.0 * macs
    if mask[1]:
        flops += 2.0 * macs
    if len(mask) > 2 and mask[2]:
        flops += grad_out.numel()
    return flops


# ---- fused attention (q [B, H, Sq, D], k [B, Hk, Sk, D], v [B, Hk, Sk, Dv]) ----
# Forward, per (query, key) pair that the kernel computes: q·k (2D), p·v (2Dv), softmax on the score:
# scale, running max, subtract, exp, running sum (5); plus the final 1/sum on each output row (Sq·Dv).
# Backward (flash / memory-efficient / CPU kernels all recompute the scores from the saved logsumexp):
# recompute q·k (2D), dV += pᵀ·dO (2Dv), dP = dO·vᵀ (2Dv), dQ += dS·k (2D), dK += dSᵀ·q (2D); elementwise
# scale, subtract lse, exp, dS = p·(dP - δ), scale (6); and δ = rowsum(dO·O) (2·Sq·Dv).
# A causal mask (PyTorch's top-left alignment: query i sees keys j <= i) lets these kernels skip the masked
# tiles, so only the kept pairs are counted; an explicit mask tensor is computed in full. Dropout adds one
# multiply per pair in each direction. torch.utils.flop_counter counts the full square even when causal,
# no recompute and no softmax, and nothing at all for the CPU kernel.

ATTN_FWD_PER_PAIR = 5
ATTN_BWD_PER_PAIR = 6


def causal_pairs(sq: int, sk: int) -> int:
    """Pairs (i, j) with j <= i, i < sq, j < sk: sum of min(i + 1, sk)."""
    if sq <= sk:
        return sq * (sq + 1) // 2
    return sk * (sk + 1) // 2 + (sq - sk) * sk


def _attention(q, k, v, causal: bool, dropout_p: float, backward: bool) -> float:
    heads = math.prod(q.shape[:-2])
    sq, d = q.shape[-2], q.shape[-1]
    sk, dv = k.shape[-2], v.shape[-1]
    pairs = causal_pairs(sq, sk) if causal else sq * sk
    drop = 1 if dropout_p else 0
    if backward:
        return float(heads) * (pairs * (6 * d + 4 * dv + ATTN_BWD_PER_PAIR + drop) + 2 * sq * dv)
    return float(heads) * (pairs * (2 * d + 2 * dv + ATTN_FWD_PER_PAIR + drop) + sq * dv)


def _fwd(c: Call) -> float:
    q, k, v = c.args[0], c.args[1], c.args[2]
    masked = c.arg("attn_mask") is not None or c.arg("attn_bias") is not None
    causal = bool(c.arg("is_causal", False)) and not masked
    return _attention(q, k, v, causal, c.arg("dropout_p", 0.0) or 0.0, backward=False)


def _bwd(c: Call) -> float:
    q, k, v = c.args[1], c.args[2], c.args[3]
    masked = c.arg("attn_mask") is not None or c.arg("attn_bias") is not None
    causal = bool(c.arg("is_causal", False)) and not masked
    return _attention(q, k, v, causal, c.arg("dropout_p", 0.0) or 0.0, backward=True)


formula(
    "aten._scaled_dot_product_flash_attention",
    "aten._scaled_dot_product_efficient_attention",
    "aten._scaled_dot_product_cudnn_attention",
    "aten._scaled_dot_product_flash_attention_for_cpu",
    "aten._scaled_dot_product_fused_attention_overrideable",
    category="matrix",
)(_fwd)
formula(
    "aten._scaled_dot_product_flash_attention_backward",
    "aten._scaled_dot_product_efficient_attention_backward",
    "aten._scaled_dot_product_cudnn_attention_backward",
    "aten._scaled_dot_product_flash_attention_for_cpu_backward",
    "aten._scaled_dot_product_fused_attention_overrideable_backward",
    category="matrix",
)(_bwd)
