"""Elementwise ops, reductions, the optimizer's arithmetic and memory-only ops.

Convention (stated once, used everywhere): every arithmetic operation, comparison or select, and every
transcendental function (exp, log, sqrt, rsqrt, tanh, erf, sin, cos) is 1 FLOP per element. The tables give
the FLOPs per element with the derivation; a pointwise op costs that times its output elements (for
in-place and _foreach ops, the elements of the first argument).
"""

from __future__ import annotations

from advisor.profiler.formulas import GELU_TANH
from advisor.profiler.registry import Call, formula, numel, out_numel

POINTWISE: dict[int, tuple[str, ...]] = {
    # one operation per element
    1: (
        "add",
        "add_",
        "sub",
        "sub_",
        "mul",
        "mul_",
        "div",
        "div_",
        "neg",
        "neg_",
        "abs",
        "rsub",
        "relu",
        "relu_",
        "threshold",
        "exp",
        "exp_",
        "exp2",
        "expm1",
        "log",
        "log_",
        "log2",
        "log10",
        "log1p",
        "sqrt",
        "sqrt_",
        "rsqrt",
        "rsqrt_",
        "reciprocal",
        "reciprocal_",
        "tanh",
        "tanh_",
        "sin",
        "cos",
        "erf",
        "pow",
        "pow_",
        "maximum",
        "minimum",
        "eq",
        "ne",
        "lt",
        "gt",
        "le",
        "ge",
        "where",
        "masked_fill",
        "masked_fill_",
        "sign",
        "floor",
        "ceil",
        "round",
        "trunc",
        "remainder",
        "fmod",
        "logical_not",
        "logical_and",
        "logical_or",
        "bitwise_and",
        "bitwise_or",
        "bitwise_not",
        "square",
        "threshold_backward",
    ),
    # clamp: two comparisons; hardtanh (clamp) and its backward (two compares + select... counted as 2)
    2: (
        "clamp",
        "clamp_",
        "clamp_min",
        "clamp_min_",
        "clamp_max",
        "clamp_max_",
        "hardtanh",
        "hardtanh_",
        "hardtanh_backward",
        "leaky_relu",
        "leaky_relu_",
        "leaky_relu_backward",
    ),
    # addcmul a + v*b*c, addcdiv a + v*b/c, lerp a + w*(b - a): 3 each; softplus log(1 + exp(x)): 3;
    # sigmoid_backward g*y*(1-y): 3; tanh_backward g*(1-y*y): 3; elu: compare, exp, sub/mul: 3
    3: (
        "addcmul",
        "addcmul_",
        "addcdiv",
        "addcdiv_",
        "lerp",
        "lerp_",
        "softplus",
        "sigmoid_backward",
        "tanh_backward",
        "elu",
        "elu_",
        "hardsigmoid",
        "elu_backward",
    ),
    # sigmoid 1/(1+exp(-x)): neg, exp, add, div; hardswish x*clamp(x+3,0,6)/6: add, 2 compares... add, clamp
    # (2), mul, div
    4: ("sigmoid", "sigmoid_", "hardswish", "hardswish_", "hardsigmoid_backward"),
    # silu x*sigmoid(x): 4 + 1; gelu (erf) 0.5*x*(1+erf(x/sqrt2)): mul, erf, add, mul, mul; softplus_backward
    # g*sigmoid(x): 4 + 1; hardswish_backward: 2 compares, mul, add, mul
    5: ("silu", "silu_", "softplus_backward", "hardswish_backward"),
    # silu_backward g*s*(1 + x*(1-s)) with s = sigmoid(x): 4 + sub, mul, add, mul, mul
    9: ("silu_backward",),
}

# reductions: FLOPs per input element (plus per output element where noted)
REDUCE_PER_INPUT: dict[str, int] = {
    "sum": 1,
    "mean": 1,
    "amax": 1,
    "amin": 1,
    "max": 1,
    "min": 1,
    "prod": 1,
    "argmax": 1,
    "argmin": 1,
    "cumsum": 1,
    "cumprod": 1,
    "any": 1,
    "all": 1,
    "var": 4,
    "std": 4,
    "var_mean": 4,
    "std_mean": 4,  # mean (1), subtract (1), square (1), sum (1)
    "linalg_vector_norm": 2,
    "norm": 2,  # square (1), sum (1); the root is per output
    "logsumexp": 4,  # max (1), subtract (1), exp (1), sum (1); the log is per output
}
REDUCE_PER_OUTPUT: dict[str, int] = {
    "mean": 1,
    "var": 1,
    "std": 2,
    "var_mean": 1,
    "std_mean": 2,
    "linalg_vector_norm": 1,
    "norm": 1,
    "logsumexp": 2,
}

MEMORY_OPS = (
    "_to_copy",
    "copy_",
    "clone",
    "cat",
    "stack",
    "index",
    "index_select",
    "gather",
    "scatter",
    "scatter_",
    "embedding",
    "zeros",
    "ones",
    "empty",
    "empty_like",
    "zeros_like",
    "ones_like",
    "full",
    "full_like",
    "fill_",
    "zero_",
    "new_empty_strided",
    "new_zeros",
    "new_ones",
    "new_empty",
    "new_full",
    "empty_strided",
    "scalar_tensor",
    "arange",
    "randn",
    "rand",
    "randint",
    "randperm",
    "normal_",
    "uniform_",
    "bernoulli_",
    "constant_pad_nd",
    "repeat",
    "tril",
    "triu",
    "slice_backward",
    "select_backward",
    "index_put_",
    "index_put",
    "_local_scalar_dense",
    "split_with_sizes_copy",
    "unsafe_split",
    "unsafe_chunk",
    "flip",
    "roll",
    "_foreach_copy_",
    "_foreach_zero_",
    "nll_loss_backward",
    "nll_loss2d_backward",
    "embedding_backward",
    "masked_scatter",
    "expand_copy",
    "permute_copy",
    "_unsafe_index",
    "repeat_interleave",
    "one_hot",
    "sort",
    "topk",
    "lift_fresh_copy",
    "resize_",
    "set_",
    "native_dropout",
    "native_dropout_backward",
)


def _elements(c: Call) -> int:
    n = out_numel(c.out)
    if n:
        return n
    first = c.args[0] if c.args else None
    return out_numel(first) if isinstance(first, (list, tuple)) else numel(first)


def _pointwise(per_element: int):
    def fn(c: Call) -> float:
        return float(per_element * _elements(c))

    fn.__name__ = f"pointwise_{per_element}"
    return fn


def _foreach_elements(c: Call) -> int:
    return sum(t.numel() for t in c.args[0])


def _foreach(per_element: int):
    def fn(c: Call) -> float:
        return float(per_element * _foreach_elements(c))

    fn.__name__ = f"foreach_{per_element}"
    return fn


def _reduction(name: str):
    per_in, per_out = REDUCE_PER_INPUT[name], REDUCE_PER_OUTPUT.get(name, 0)

    def fn(c: Call) -> float:
        return float(per_in * numel(c.args[0]) + per_out * out_numel(c.out))

    fn.__name__ = f"reduce_{name}"
    return fn


def _zero(c: Call) -> float:
    return 0.0


for _cost, _names in POINTWISE.items():
    formula(*(f"aten.{n}" for n in _names), category="vector")(_pointwise(_cost))
for _name in REDUCE_PER_INPUT:
    formula(f"aten.{_name}", category="vector")(_reduction(_name))
formula(*(f"aten.{n}" for n in MEMORY_OPS), category="memory")(_zero)

# _foreach ops (the optimizers' multi-tensor path): same per-element costs as their single-tensor forms
FOREACH: dict[int, tuple[str, ...]] = {
    1: (
        "add",
        "add_",
        "sub",
        "sub_",
        "mul",
        "mul_",
        "div",
        "div_",
        "neg",
        "neg_",
        "sqrt",
        "sqrt_",
        "abs",
        "reciprocal_",
        "maximum_",
        "sign",
    ),
    2: ("norm",),  # square, sum
    3: ("addcmul", "addcmul_", "addcdiv", "addcdiv_", "lerp", "lerp_"),
}
for _cost, _names in FOREACH.items():
    formula(*(f"aten._foreach_{n}" for n in _names), category="vector")(_foreach(_cost))


@formula("aten.gelu", "aten.gelu_", category="vector")
def gelu(c: Call) -> float:
    # erf form: x/sqrt2 (1), erf (1), +1 (1), *x (1), *0.5 (1) = 5; tanh form: GELU_TANH = 9
    return float((GELU_TANH if c.arg("approximate", "none") == "tanh" else 5) * _elements(c))


@formula("aten.gelu_backward", category="vector")
def gelu_backward(c: Call) -> float:
    # erf form: cdf 0.5*(1+erf(x/sqrt2)) (4), pdf exp(-x*x/2)/sqrt(2pi) (x*x, *-0.5, exp, *k: 4),
    # g*(cdf + x*pdf) (mul, add, mul: 3) = 11.
    # tanh form: inner u = c*(x + 0.044715x^3) (5), t = tanh(u) (1), 1 - t*t (2), u' = c*(1 + 3*0.044715x^2)
    # (x*x, *k, +1, *c: 4), 0.5*(1+t) + 0.5*x*(1-t*t)*u' (add, mul, mul, mul, mul, add: 6), *g (1) = 19
    return float((19 if c.arg("approximate", "none") == "tanh" else 11) * _elements(c))


@formula("aten._fused_adamw_", "aten._fused_adam_", "aten._fused_adamw", "aten._fused_adam", category="vector")
def fused_adam(c: Call) -> float:
    # per element, as the single-tensor AdamW path computes it: p *= 1 - lr*wd (1), m.lerp_(g, 1-b1) (3),
    # v = b2*v (1) + (1-b2)*g*g (addcmul: 3), denom = sqrt(v) / bc2 + eps (3), p.addcdiv_(m, denom, -step)
    # (3) = 14 for AdamW; Adam without weight decay skips the first multiply (13), with it adds g += wd*p (2)
    decoupled = "adamw" in str(c.func)
    wd = c.arg("weight_decay", 0.0) or 0.0
    per = 13 + (1 if decoupled else 2) * (wd != 0)
    return float(per * _foreach_elements(c))


@formula("aten._fused_sgd_", "aten._fused_sgd", category="vector")
def fused_sgd(c: Call) -> float:
    # momentum buf = mu*buf + g (2), p -= lr*buf (2); weight decay g += wd*p (2); no momentum: p -= lr*g (2)
    momentum = c.arg("momentum", 0.0) or 0.0
    wd = c.arg("weight_decay", 0.0) or 0.0
    per = (4 if momentum else 2) + (2 if wd else 0)
    return float(per * _foreach_elements(c))
