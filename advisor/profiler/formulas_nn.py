"""Normalisations, softmax, losses, embeddings, pooling and recurrent cells.

Per-element conventions as in formulas_pointwise (every arithmetic op or transcendental is 1 FLOP).
"""

from __future__ import annotations

import math

from advisor.profiler.registry import Call, formula, numel, out_numel

# Normalisation forward, per element: mean (add 1), x - mean (1), square (1), sum (1), * rstd (1) = 5;
# affine: * weight (1), + bias (1). Per normalised row or group: two divisions, + eps, rsqrt = 4.
NORM_FWD = 5
# Backward, per element, for grad_input: xhat = (x - mean) * rstd (2), sum g' (1), sum g'*xhat (2),
# dx = rstd * (g' - mean1 - xhat*mean2) (4) = 9, where g' = g * weight (+1 with a weight);
# grad_weight: g*xhat (1) + reduce (1) = 2; grad_bias: reduce (1).
NORM_BWD_INPUT, NORM_BWD_WEIGHT, NORM_BWD_BIAS = 9, 2, 1


def _norm_fwd(x, rows: int, weight, bias) -> float:
    per = NORM_FWD + (weight is not None) + (bias is not None)
    return float(per * numel(x) + 4 * rows)


def _norm_bwd(x, weight, mask) -> float:
    flops = 0.0
    if mask[0]:
        flops += (NORM_BWD_INPUT + (weight is not None)) * numel(x)
    if len(mask) > 1 and mask[1] and weight is not None:
        flops += NORM_BWD_WEIGHT * numel(x)
    if len(mask) > 2 and mask[2]:
        flops += NORM_BWD_BIAS * numel(x)
    return flops


@formula("aten.native_layer_norm", category="vector")
def layer_norm(c: Call) -> float:
    x, shape = c.args[0], c.args[1]
    return _norm_fwd(x, numel(x) // max(1, math.prod(shape)), c.arg("weight"), c.arg("bias"))


@formula("aten.native_layer_norm_backward", category="vector")
def layer_norm_backward(c: Call) -> float:
    return _norm_bwd(c.args[1], c.arg("weight"), c.arg("output_mask", [True, True, True]))


@formula("aten.native_group_norm", category="vector")
def group_norm(c: Call) -> float:
    x = c.args[0]
    return _norm_fwd(x, int(c.arg("N")) * int(c.arg("group")), c.arg("weight"), c.arg("bias"))


@formula("aten.native_group_norm_backward", category="vector")
def group_norm_backward(c: Call) -> float:
    return _norm_bwd(c.args[1], c.arg("weight"), c.arg("output_mask", [True, True, True]))


@formula(
    "aten.native_batch_norm",
    "aten._native_batch_norm_legit",
    "aten._native_batch_norm_legit_functional",
    "aten._native_batch_norm_legit_no_training",
    "aten.cudnn_batch_norm",
    "aten.miopen_batch_norm",
    category="vector",
)
def batch_norm(c: Call) -> float:
    # training: statistics per channel as above (rows = channels); inference: (x - mean) * rstd, affine = 2+2
    x = c.args[0]
    channels = x.shape[1] if x.dim() > 1 else 1
    training = c.arg("training", "no_training" not in str(c.func))
    if not training:
        return float((2 + (c.arg("weight") is not None) + (c.arg("bias") is not None)) * numel(x))
    return _norm_fwd(x, channels, c.arg("weight"), c.arg("bias"))


@formula("aten.native_batch_norm_backward", "aten.cudnn_batch_norm_backward", category="vector")
def batch_norm_backward(c: Call) -> float:
    mask = c.arg("output_mask", [True, True, True])
    return _norm_bwd(c.args[1], c.arg("weight"), mask)


@formula("aten._fused_rms_norm", category="vector")
def rms_norm(c: Call) -> float:
    # per element: square (1), sum (1), * rstd (1), * weight (1); per row: divide, + eps, rsqrt (3)
    x, shape = c.args[0], c.args[1]
    rows = numel(x) // max(1, math.prod(shape))
    return float((3 + (c.arg("weight") is not None)) * numel(x) + 3 * rows)


@formula("aten._fused_rms_norm_backward", category="vector")
def rms_norm_backward(c: Call) -> float:
    # grad_input: xhat = x * rstd (1), g' = g * w (1), sum g'*xhat (2), dx = rstd * (g' - xhat*mean) (3) = 7;
    # grad_weight: g*xhat (1) + reduce (1) = 2
    x, mask = c.args[1], c.arg("output_mask", [True, True])
    return float((7 * bool(mask[0]) + 2 * bool(len(mask) > 1 and mask[1])) * numel(x))


@formula("aten._softmax", category="vector")
def softmax(c: Call) -> float:
    # max (1), subtract (1), exp (1), sum (1), divide (1)
    return 5.0 * numel(c.args[0])


@formula("aten._safe_softmax", category="vector")
def safe_softmax(c: Call) -> float:
    # softmax (5) and a select that zeroes fully masked rows (1)
    return 6.0 * numel(c.args[0])


@formula("aten._log_softmax", category="vector")
def log_softmax(c: Call) -> float:
    # max (1), subtract (1), exp (1), sum (1), subtract log-sum (1); the log is per row (ignored)
    return 5.0 * numel(c.args[0])


@formula("aten._softmax_backward_data", category="vector")
def softmax_backward(c: Call) -> float:
    # dx = y * (g - sum(g*y)): mul (1), sum (1), subtract (1), mul (1)
    return 4.0 * numel(c.args[0])


@formula("aten._log_softmax_backward_data", category="vector")
def log_softmax_backward(c: Call) -> float:
    # dx = g - exp(y) * sum(g): sum (1), exp (1), mul (1), subtract (1)
    return 4.0 * numel(c.args[0])


@formula("aten.nll_loss_forward", "aten.nll_loss2d_forward", category="vector")
def nll_loss(c: Call) -> float:
    # pick one log-probability per target and sum them: one add per target
    return float(numel(c.args[1]))


@formula("aten.mse_loss", category="vector")
def mse_loss(c: Call) -> float:
    # subtract, square, sum
    return 3.0 * numel(c.args[0])


@formula("aten.mse_loss_backward", category="vector")
def mse_loss_backward(c: Call) -> float:
    # 2 * (x - y) * g / N: subtract, mul, mul
    return 3.0 * numel(c.args[1])


@formula("aten.embedding_dense_backward", category="vector")
def embedding_backward(c: Call) -> float:
    # scatter-add of the output gradient into the table: one add per gradient element
    return float(numel(c.args[0]))


@formula("aten.max_pool2d_with_indices", "aten.max_pool3d_with_indices", category="vector")
def max_pool(c: Call) -> float:
    # one comparison per window element per output
    return float(out_numel(c.out[0]) * math.prod(c.args[1]))


@formula("aten.max_pool2d_with_indices_backward", "aten.max_pool3d_with_indices_backward", category="vector")
def max_pool_backward(c: Call) -> float:
    # scatter-add of each output gradient to its argmax: one add per output-gradient element
    return float(numel(c.args[0]))


@formula("aten.avg_pool2d", "aten.avg_pool3d", category="vector")
def avg_pool(c: Call) -> float:
    # window sum (prod(k) adds) and one divide per output
    return float(out_numel(c.out) * (math.prod(c.args[1]) + 1))


@formula("aten.avg_pool2d_backward", "aten.avg_pool3d_backward", category="vector")
def avg_pool_backward(c: Call) -> float:
    # each output gradient is divided (1) and added into its window (prod(k))
    return float(numel(c.args[0]) * (math.prod(c.args[2]) + 1))


@formula("aten._adaptive_avg_pool2d", "aten._adaptive_avg_pool3d", category="vector")
def adaptive_avg_pool(c: Call) -> float:
    # every input element is added once, every output divided once
    return float(numel(c.args[0]) + out_numel(c.out))


@formula("aten._adaptive_avg_pool2d_backward", "aten._adaptive_avg_pool3d_backward", category="vector")
def adaptive_avg_pool_backward(c: Call) -> float:
    # every input gradient element receives its window's gradient / window size: 1 per element
    return float(numel(c.args[1]))


# ---- recurrent cells ----
# LSTM, per batch row and hidden unit and step: gate pre-activations ih + hh (4 adds), biases (8 adds),
# three sigmoids (3 x 4) and one tanh (1), c' = f*c + i*g (3), h = o * tanh(c') (2) = 30.
# GRU: ih + hh (3) + biases (6), two sigmoids (8), n = tanh(x_n + r*h_n) (3), h' = (1-z)*n + z*h (4) = 24.
# Elman RNN: ih + hh (1) + biases (2) + tanh/relu (1) = 4. Backward elementwise is taken as twice the forward
# (an approximation: each gate's derivative costs about as much as the gate).
RNN_ELEMENTWISE = {2: 30, 3: 24, 0: 4, 1: 4}  # cuDNN modes: 0 relu, 1 tanh, 2 LSTM, 3 GRU


@formula("aten._thnn_fused_lstm_cell", category="vector")
def fused_lstm_cell(c: Call) -> float:
    # the gate matmuls ran before (as mm/addmm); this kernel does the elementwise part: 30 per unit with the
    # biases, 22 without
    cx = c.args[2]
    return float((30 if c.arg("input_bias") is not None else 22) * numel(cx))


def _rnn_parts(c: Call, weights, hx, x, batch_first: bool) -> tuple[float, float]:
    hidden = hx.shape[-1]
    steps_x_batch = numel(x) // x.shape[-1]
    matrix = sum(numel(w) for w in weights if w.dim() == 2)
    per_unit = RNN_ELEMENTWISE.get(int(c.arg("mode")), 4)
    return 2.0 * steps_x_batch * matrix, float(per_unit * steps_x_batch * hidden * hx.shape[0])


@formula("aten._cudnn_rnn", category="matrix")
def cudnn_rnn(c: Call) -> float:
    # every step multiplies the input and the hidden state by each layer's W_ih and W_hh: 2 * T * B * numel(W)
    mm, ew = _rnn_parts(c, c.args[1], c.args[4], c.args[0], bool(c.arg("batch_first")))
    return mm + ew


@formula("aten._cudnn_rnn_backward", category="matrix")
def cudnn_rnn_backward(c: Call) -> float:
    # gradient w.r.t. inputs/hidden and w.r.t. weights: two products of the forward's size; elementwise 2x
    mm, ew = _rnn_parts(c, c.args[1], c.args[4], c.args[0], bool(c.arg("batch_first")))
    return 2 * mm + 2 * ew


def _mkldnn_parts(c: Call, w_ih, w_hh, x) -> tuple[float, float]:
    # one layer, one direction (the CPU LSTM runs this op per layer and direction)
    hidden = w_hh.shape[-1]
    steps_x_batch = numel(x) // x.shape[-1]
    per_unit = RNN_ELEMENTWISE.get(int(c.arg("mode")), 4)
    return 2.0 * steps_x_batch * (numel(w_ih) + numel(w_hh)), float(per_unit * steps_x_batch * hidden)


@formula("aten.mkldnn_rnn_layer", category="matrix")
def mkldnn_rnn_layer(c: Call) -> float:
    mm, ew = _mkldnn_parts(c, c.args[1], c.args[2], c.args[0])
    return mm + ew


@formula("aten.mkldnn_rnn_layer_backward", category="matrix")
def mkldnn_rnn_layer_backward(c: Call) -> float:
    mm, ew = _mkldnn_parts(c, c.args[1], c.args[2], c.args[0])
    return 2 * mm + 2 * ew


@formula("aten.binary_cross_entropy_with_logits", category="vector")
def bce_with_logits(c: Call) -> float:
    # torch's stable form (1 - y)·x + log(exp(-m) + exp(-x - m)) + m with m = max(-x, 0):
    # 1 - y, ·x (2); m: neg, clamp (2); exp(-m): neg, exp (2); exp(-x - m): neg, sub, exp (3);
    # add, log, + m (3); add to the first term (1) = 13 per element, then the mean's add (1) = 14
    return 14.0 * numel(c.args[0])


@formula("aten.smooth_l1_loss", category="vector")
def smooth_l1_loss(c: Call) -> float:
    # z = |x - y| (2); z < beta (1); 0.5·z²/beta (3) or z - 0.5·beta (1); select (1) = 8, mean's add (1) = 9
    return 9.0 * numel(c.args[0])


@formula("aten.smooth_l1_loss_backward", category="vector")
def smooth_l1_loss_backward(c: Call) -> float:
    # d = clamp((x - y) / beta, -1, 1) · g / N: sub, div, clamp (2), mul, div = 6 per element of x
    return 6.0 * numel(c.args[1])


@formula("aten.index_add", "aten.index_add_", category="vector")
def index_add(c: Call) -> float:
    # one add per element of `source` into the rows `index` picks (alpha = 1)
    return float(numel(c.args[3]))


@formula("aten.scatter_add", "aten.scatter_add_", category="vector")
def scatter_add(c: Call) -> float:
    # one add per element of `src` (as many as `index` has) into self
    return float(numel(c.args[2]))
