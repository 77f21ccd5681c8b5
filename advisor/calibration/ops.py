"""The vector and memory ops of a training step, each timed at a few sizes: normalisations, activations and
their gradients, softmax, pooling, embedding gathers and their scatters, dropout, reductions, copies, the
in-place updates of the optimizers, and fused attention.

Their cost is not their FLOP count, nor simply their bytes at the best bandwidth: batch norm on a CPU makes
several passes over NCHW data, an embedding-bag gradient zeroes and scatters into the whole table, erf and
exp cost far more than one FLOP. Each case calls one aten op directly (the backward ops with the tensors
autograd would pass them), runs once under the profiler's own counter, so its FLOPs and bytes are exactly
what a profile records, and is then timed with its inputs alternating between two sets. The overlay turns
each (FLOPs, bytes, seconds) into an efficiency against the op's own roofline at the device's peaks.
"""

from __future__ import annotations

from collections.abc import Callable

from advisor.calibration.bench import Clock, alternate
from advisor.estimator.kernels import DRAW_CURVE_Q
from advisor.vocab import EMBEDDING_GRADS

# activation elements per call: 1 KiB .. 8 MiB of fp32. Two alternating input sets of the largest size no longer
# fit in a server's last-level cache; larger fresh outputs would be mmap'ed by glibc on every call (beyond its
# 32 MiB threshold), a cost the add memory curve (up to 128 MiB) already carries.
SIZES = (1 << 8, 1 << 12, 1 << 16, 1 << 19, 1 << 21)
# The optimizer's in-place updates, once more on 64 MiB tensors: a step's updates find their data where the rest of
# the step left it, out of every cache, and an in-place op allocates nothing, so this point is the memory's
# streaming rate for them (roofline.reuse_cap looks the optimizer up there). Two sets of three such tensors.
INPLACE = ("aten.mul_", "aten.add_", "aten.addcmul_", "aten.addcdiv_", "aten.lerp_")
COLD_SIZE = 1 << 24
# Gradients of gathers: a zeroed table of the weight's size (written), then a scatter-add of the gathered rows
# (read). The table is costed as memory traffic, the scatter by its own curve over the bytes it reads.
SCATTERS = EMBEDDING_GRADS
ATTENTION_SIZES = (1 << 14, 1 << 18)
CHANNELS, SIDE, WIDTH, ROWS_WIDE, TABLE = 64, 16, 256, 1024, 4096  # a small table: the scatter dominates
# Pooling: the curves are measured on 2 x 2 (x 2) windows at stride 2; on a CPU a window's elements cost far more
# than their bytes (a 3 x 3 stride-1 max pool takes about four times a 2 x 2 stride-2 one over the same input, at
# about twice the bytes), so each windowed op is timed once more on 3 x 3 (x 3) windows at stride 1, padded, and
# the overlay prices the window elements beyond the reference's (overlay: `op_window`).
POOLS = (
    "aten.max_pool2d_with_indices",
    "aten.max_pool2d_with_indices_backward",
    "aten.max_pool3d_with_indices",
    "aten.max_pool3d_with_indices_backward",
    "aten.avg_pool2d",
    "aten.avg_pool2d_backward",
    "aten.avg_pool3d",
    "aten.avg_pool3d_backward",
)
REFERENCE_WINDOW, WIDE_WINDOW = (2, 2, 0), (3, 1, 1)  # (kernel, stride, padding) per spatial dimension
WINDOW_SIZE = 1 << 16  # activation elements of the wide-window call
DRAW_ELEMENTS = 1 << 17  # a draw at two probabilities: 0.5 ms to 1.5 ms a call on the development VM's CPUs


def nchw(n: int) -> tuple[int, int, int, int]:
    """(N, C, H, W) of about n elements: up to 64 channels of up to 16 x 16, then a growing batch."""
    c = min(CHANNELS, max(4, n // 256))
    side = min(SIDE, max(2, int((n // c) ** 0.5)))
    return max(1, n // (c * side * side)), c, side, side


def ncdhw(n: int) -> tuple[int, int, int, int, int]:
    """(N, C, D, H, W) of about n elements: up to 32 channels of 4 frames of up to 16 x 16, then a growing batch."""
    c = min(CHANNELS // 2, max(2, n // 1024))
    side = min(SIDE, max(2, int((n // (4 * c)) ** 0.5)))
    return max(1, n // (c * 4 * side * side)), c, 4, side, side


def pool_call(device: str, op: str, n: int, window: tuple[int, int, int]) -> Callable[[], object]:
    """A call of pooling op `op` (one of POOLS) on about n input elements, with (kernel, stride, padding) `window`
    in every spatial dimension; a backward op gets the gradient and indices its forward would pass it."""
    import torch

    A = torch.ops.aten
    dims = 3 if "3d" in op else 2
    t = torch.randn(*(ncdhw(n) if dims == 3 else nchw(n)), device=device)
    k, s, p = ([v] * dims for v in window)
    if "max_pool" in op:
        forward = A.max_pool3d_with_indices if dims == 3 else A.max_pool2d_with_indices
        if not op.endswith("_backward"):
            return lambda: forward(t, k, s, p)
        out, idx = forward(t, k, s, p)
        g, backward = torch.randn_like(out), getattr(A, f"max_pool{dims}d_with_indices_backward")
        return lambda: backward(g, t, k, s, p, [1] * dims, False, idx)
    forward = A.avg_pool3d if dims == 3 else A.avg_pool2d
    if not op.endswith("_backward"):
        return lambda: forward(t, k, s, p)
    g, backward = torch.randn_like(forward(t, k, s, p)), getattr(A, f"avg_pool{dims}d_backward")
    return lambda: backward(g, t, k, s, p, False, True, None)


def _cases(device: str) -> list[tuple[str, Callable[[int], Callable[[], object]]]]:
    """(aten op, make(n) -> a call of that op on about n activation elements)."""
    import torch

    A = torch.ops.aten

    def x(*shape, low: float | None = None):
        t = torch.randn(*shape, device=device)
        return t.abs() + low if low is not None else t

    def flat(n):
        return x(n), x(n)

    def bn(n):
        shape = nchw(n)
        c = shape[1]
        inp, w, b = x(*shape), x(c), x(c)
        rm, rv = torch.zeros(c, device=device), torch.ones(c, device=device)
        return inp, w, b, rm, rv

    def bn_bwd(n):
        inp, w, b, rm, rv = bn(n)
        _, mean, invstd = A.native_batch_norm(inp, w, b, rm, rv, True, 0.1, 1e-5)
        g = torch.randn_like(inp)
        return lambda: A.native_batch_norm_backward(g, inp, w, rm, rv, mean, invstd, True, 1e-5, [True] * 3)

    def gn_args(n):
        n_, c, h, w_ = nchw(n)
        return x(n_, c, h, w_), x(c), x(c), n_, c, h * w_, min(8, c)

    def gn(n):
        inp, w, b, batch, c, hw, groups = gn_args(n)
        return lambda: A.native_group_norm(inp, w, b, batch, c, hw, groups, 1e-5)

    def gn_bwd(n):
        inp, w, b, batch, c, hw, groups = gn_args(n)
        _, mean, rstd = A.native_group_norm(inp, w, b, batch, c, hw, groups, 1e-5)
        g = torch.randn_like(inp)
        return lambda: A.native_group_norm_backward(g, inp, mean, rstd, w, batch, c, hw, groups, [True] * 3)

    def ln_bwd(n):
        inp, w, b = x(max(1, n // WIDTH), WIDTH), x(WIDTH), x(WIDTH)
        _, mean, rstd = A.native_layer_norm(inp, [WIDTH], w, b, 1e-5)
        g = torch.randn_like(inp)
        return lambda: A.native_layer_norm_backward(g, inp, [WIDTH], mean, rstd, w, b, [True] * 3)

    def causal(n):  # n elements of causal masks over rows of WIDTH: true above the diagonal
        i = torch.arange(n, device=device)
        return i % WIDTH > (i // WIDTH) % WIDTH

    def rows(n):
        return x(max(1, n // ROWS_WIDE), ROWS_WIDE)

    def softmax_bwd(op, n):
        inp = rows(n)
        out = A._softmax(inp, -1, False) if op == "soft" else A._log_softmax(inp, -1, False)
        g = torch.randn_like(inp)
        back = A._softmax_backward_data if op == "soft" else A._log_softmax_backward_data
        return lambda: back(g, out, -1, torch.float32)

    def adaptive_bwd(dims):
        def make(n):
            t = x(*(ncdhw(n) if dims == 3 else nchw(n)))
            g = x(*t.shape[:2], *[1] * dims)
            backward = getattr(A, f"_adaptive_avg_pool{dims}d_backward")
            return lambda: backward(g, t)

        return make

    def table(n):
        idx = torch.randint(0, TABLE, (max(1, n // CHANNELS),), device=device)
        return x(TABLE, CHANNELS), idx

    def emb_bwd(n):
        _, idx = table(n)
        g = x(idx.numel(), CHANNELS)
        return lambda: A.embedding_dense_backward(g, idx, TABLE, -1, False)

    def bag(n):
        w, idx = table(4 * n)
        offsets = torch.arange(0, idx.numel(), 4, device=device)
        return w, idx, offsets

    def bag_bwd(n):
        w, idx, offsets = bag(n)
        out, o2b, size, mx = A._embedding_bag(w, idx, offsets, False, 0, False, None, False, -1)
        g = torch.randn_like(out)
        return lambda: A._embedding_bag_backward(g, idx, offsets, o2b, size, mx, TABLE, False, 0, False, None, -1)

    def dropout_bwd(n):
        g, inp = flat(n)
        mask = A.native_dropout(inp, 0.1, True)[1]
        return lambda: A.native_dropout_backward(g, mask, 1 / 0.9)

    def unary(op, low=None):
        return lambda n: lambda t=x(n, low=low): op(t)

    def grad_of(op, fwd=None):
        def make(n):
            g, inp = flat(n)
            saved = fwd(inp) if fwd is not None else inp
            return lambda: op(g, saved)

        return make

    def inplace(fn):
        def make(n):
            a, b = flat(n)
            c = x(n, low=0.5)
            return lambda: fn(a, b, c)

        return make

    return [
        ("aten.relu", unary(A.relu)),
        ("aten.threshold_backward", lambda n: lambda g=x(n), t=x(n): A.threshold_backward(g, t, 0.0)),
        ("aten.gelu", unary(A.gelu)),
        ("aten.gelu_backward", grad_of(A.gelu_backward)),
        ("aten.silu", unary(A.silu)),
        ("aten.silu_backward", grad_of(A.silu_backward)),
        ("aten.sigmoid", unary(A.sigmoid)),
        ("aten.sigmoid_backward", grad_of(A.sigmoid_backward, torch.sigmoid)),
        ("aten.tanh", unary(A.tanh)),
        ("aten.tanh_backward", grad_of(A.tanh_backward, torch.tanh)),
        ("aten.hardtanh", lambda n: lambda t=x(n): A.hardtanh(t, 0.0, 6.0)),
        ("aten.hardtanh_backward", lambda n: lambda g=x(n), t=x(n): A.hardtanh_backward(g, t, 0.0, 6.0)),
        ("aten.native_batch_norm", lambda n: lambda a=bn(n): A.native_batch_norm(*a, True, 0.1, 1e-5)),
        ("aten.native_batch_norm_backward", bn_bwd),
        ("aten.native_group_norm", gn),
        ("aten.native_group_norm_backward", gn_bwd),
        (
            "aten.native_layer_norm",
            lambda n: lambda t=x(max(1, n // WIDTH), WIDTH), w=x(WIDTH): A.native_layer_norm(t, [WIDTH], w, w, 1e-5),
        ),
        ("aten.native_layer_norm_backward", ln_bwd),
        ("aten._softmax", lambda n: lambda t=rows(n): A._softmax(t, -1, False)),
        ("aten._softmax_backward_data", lambda n: softmax_bwd("soft", n)),
        ("aten._log_softmax", lambda n: lambda t=rows(n): A._log_softmax(t, -1, False)),
        ("aten._log_softmax_backward_data", lambda n: softmax_bwd("log", n)),
        *((op, lambda n, op=op: pool_call(device, op, n, REFERENCE_WINDOW)) for op in POOLS),
        ("aten._adaptive_avg_pool2d", lambda n: lambda t=x(*nchw(n)): A._adaptive_avg_pool2d(t, [1, 1])),
        ("aten._adaptive_avg_pool2d_backward", adaptive_bwd(2)),
        ("aten._adaptive_avg_pool3d", lambda n: lambda t=x(*ncdhw(n)): A._adaptive_avg_pool3d(t, [1, 1, 1])),
        ("aten._adaptive_avg_pool3d_backward", adaptive_bwd(3)),
        ("aten.embedding", lambda n: lambda a=table(n): A.embedding(*a)),
        ("aten.embedding_dense_backward", emb_bwd),
        (
            "aten._embedding_bag",
            lambda n: lambda a=bag(n): A._embedding_bag(a[0], a[1], a[2], False, 0, False, None, False, -1),
        ),
        ("aten._embedding_bag_backward", bag_bwd),
        ("aten.native_dropout", lambda n: lambda t=x(n): A.native_dropout(t, DRAW_CURVE_Q, True)),
        ("aten.native_dropout_backward", dropout_bwd),
        # dropout on a CPU: a mask drawn in place (then div_ and mul); the draw runs on one thread whatever torch's
        # count (the development VM's Xeon: 20 draws of a seq2seq step, 12.0 ms at one thread, 11.7 at two)
        ("aten.bernoulli_", lambda n: lambda t=x(n): t.bernoulli_(1.0 - DRAW_CURVE_Q)),
        ("aten.sum", lambda n: lambda t=x(max(1, n // WIDTH), WIDTH): A.sum.dim_IntList(t, [0])),
        ("aten.mul", lambda n: lambda a=flat(n): A.mul.Tensor(*a)),
        ("aten.cat", lambda n: lambda a=flat(n // 2): A.cat([a[0].view(-1, 64), a[1].view(-1, 64)], 1)),
        ("aten.clone", unary(A.clone)),
        # comparisons and masks (a causal attention's mask, a max's gradient): a bool tensor written or read, one byte
        # an element. The masks are causal ones (runs of true and false, as attention and padding masks have): a CPU's
        # masked_fill and where branch on each element, and on a random mask took 5-6x as long (the project's Xeon VM)
        ("aten.eq", lambda n: lambda a=flat(n): A.eq.Tensor(*a)),
        ("aten.masked_fill", lambda n: lambda t=x(n), m=causal(n): A.masked_fill.Scalar(t, m, -1e9)),
        ("aten.where", lambda n: lambda m=causal(n), a=flat(n): A.where.self(m, *a)),
        ("aten.sqrt", unary(A.sqrt, low=0.5)),
        ("aten.exp", unary(A.exp)),
        ("aten.div", lambda n: lambda a=x(n), b=x(n, low=0.5): A.div.Tensor(a, b)),
        ("aten.mul_", inplace(lambda a, b, c: a.mul_(1.0))),
        ("aten.add_", inplace(lambda a, b, c: a.add_(b, alpha=1e-12))),
        ("aten.addcmul_", inplace(lambda a, b, c: c.addcmul_(b, b, value=1e-12))),
        ("aten.addcdiv_", inplace(lambda a, b, c: a.addcdiv_(b, c, value=-1e-12))),
        ("aten.lerp_", inplace(lambda a, b, c: a.lerp_(b, 0.1))),
    ]


def draw_ratios(device: str, clock: Clock) -> dict[str, float]:
    """{draw op: seconds of a call at probability 0.5 over seconds at its curve's} on DRAW_ELEMENTS floats
    (`Efficiency.draw_half_ratio`): a CPU's draw kernels branch on each draw (`kernels.draw_factor`)."""
    import torch

    A = torch.ops.aten
    t = torch.randn(DRAW_ELEMENTS, device=device)
    calls = {
        "aten.bernoulli_": lambda p: lambda: t.bernoulli_(p),
        "aten.native_dropout": lambda p: lambda: A.native_dropout(t, 1.0 - p, True),
    }
    out = {}
    for name, call in calls.items():
        even = clock(call(0.5), f"{name} at p = 0.5")
        usual = clock(call(1.0 - DRAW_CURVE_Q), f"{name} at p = {1.0 - DRAW_CURVE_Q:g}")
        out[name] = even / max(usual, 1e-12)
    return out


def windows(device: str, clock: Clock) -> dict[str, tuple[float, float, float]]:
    """{pooling op: (FLOPs, bytes, seconds) of one call on WIDE_WINDOW windows over WINDOW_SIZE input elements}:
    with the op's reference curve (measured at that size too), what one more window element costs."""
    out = {}
    for name in POOLS:
        fns = [pool_call(device, name, WINDOW_SIZE, WIDE_WINDOW) for _ in range(2)]
        hits = [(f, b) for op, f, b, _ in _counted(fns[0]) if op == name]
        if len(hits) == 1:
            out[name] = (*hits[0], clock(alternate(fns), f"{name} 3x3 windows"))
    return out


def _attention(device: str, n: int):
    """Causal fused attention on about n elements per q/k/v: (forward call, forward + backward call)."""
    import torch
    import torch.nn.functional as F

    heads, seq, dim = 2, 128, 64
    batch = max(1, n // (heads * seq * dim))
    q, k, v = (torch.randn(batch, heads, seq, dim, device=device, requires_grad=True) for _ in range(3))
    gy = torch.randn_like(q)

    def forward():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    return forward, lambda: torch.autograd.grad(forward(), (q, k, v), gy)


def _counted(fn) -> list[tuple[str, float, float, float]]:
    """(op, FLOPs, bytes read + written, bytes written) of each aten op `fn` runs, as the profiler counts them."""
    from advisor.profiler.counter import Counter

    with Counter() as counter:
        fn()
    names = {i: key[0] for key, i in counter.keys.items()}
    return [(names[i], flops, float(read + written), float(written)) for i, flops, read, written in counter.calls]


def measure(
    device: str, clock: Clock, quick: bool = False, tick: Callable[[str], None] = lambda s: None
) -> dict[str, list[tuple[float, float, float]]]:
    """{aten op: [(FLOPs, bytes, seconds) per call at each size]}. A case whose op the counter does not
    see by that name (another device's kernel) is left out."""
    out: dict[str, list[tuple[float, float, float]]] = {}
    sizes = SIZES[:3:2] if quick else SIZES
    for name, make in _cases(device):
        for n in (*sizes, COLD_SIZE) if name in INPLACE and not quick else sizes:
            fns = [make(n) for _ in range(2)]
            hits = [(f, b, w) for op, f, b, w in _counted(fns[0]) if op == name]
            if len(hits) != 1:
                continue
            flops, nbytes, written = hits[0]
            t = clock(alternate(fns), f"{name} {nbytes / 1e6:.3g} MB")
            # a scatter: (F, bytes read, s, the table's bytes), the table to be taken off by the overlay
            point = (flops, nbytes - written, t, written) if name in SCATTERS else (flops, nbytes, t)
            out.setdefault(name, []).append(point)
    tick("attention")
    for n in ATTENTION_SIZES[:1] if quick else ATTENTION_SIZES:
        forward, both = _attention(device, n)
        counted = [c[:3] for c in _counted(forward) if c[1] > 0]
        counted_both = [c[:3] for c in _counted(both) if c[1] > 0]
        if len(counted) != 1 or len(counted_both) != 2:
            continue
        t_fwd = clock(forward, "attention")
        t_bwd = max(clock(both, "attention backward") - t_fwd, 0.1 * t_fwd)
        for (name, flops, nbytes), t in ((counted[0], t_fwd), (counted_both[1], t_bwd)):
            out.setdefault(name, []).append((flops, nbytes, t))
    return out
