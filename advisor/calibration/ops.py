"""Per-op efficiencies for ops whose cost the FLOP count misjudges: fused attention (its softmax and
masking) and transcendental elementwise work (exp, sqrt, tanh, softmax...), each counted as one FLOP
per element by the profiler but costing far more on a CPU's vector units.

Each case runs once under the profiler's own counter (so its FLOPs are exactly what a profile would record)
and is then timed; the op's efficiency is counted FLOPs / (seconds × the fp32 peak). fp32 only.
"""

from __future__ import annotations

from collections.abc import Callable

ELEMENTS = 1 << 18  # 1 MiB of fp32: a layer's activations, in the caches as they are in a training step


def _cases(device: str):
    import torch
    import torch.nn.functional as F

    x = torch.rand(ELEMENTS // 1024, 1024, device=device) + 0.5
    g = torch.randn_like(x)
    sm = torch.softmax(x, -1)
    lsm = torch.log_softmax(x, -1)
    q = torch.randn(4, 4, 256, 64, device=device, requires_grad=True)
    k = torch.randn_like(q, requires_grad=True)
    v = torch.randn_like(q, requires_grad=True)
    gy = torch.randn_like(q)

    def attention():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    return [
        ("forward", lambda: torch.sqrt(x)),
        ("forward", lambda: torch.exp(x)),
        ("forward", lambda: torch.tanh(x)),
        ("forward", lambda: torch.sigmoid(x)),
        ("forward", lambda: torch.softmax(x, -1)),
        ("forward", lambda: torch.log_softmax(x, -1)),
        ("forward", lambda: torch.ops.aten._softmax_backward_data(g, sm, -1, torch.float32)),
        ("forward", lambda: torch.ops.aten._log_softmax_backward_data(g, lsm, -1, torch.float32)),
        ("forward", attention),
        ("backward", lambda: torch.autograd.grad(attention(), (q, k, v), gy)),
    ]


def measure(device: str, clock: Callable, peak_flops: float, dispatch_s: float) -> dict[str, float]:
    """{aten op: efficiency}. A backward case times forward + backward and subtracts the forward op's time."""
    from advisor.profiler.counter import Counter

    out: dict[str, float] = {}
    seconds: dict[str, float] = {}
    for phase, fn in _cases(device):
        with Counter() as counter:
            fn()
        names = {i: key[0] for key, i in counter.keys.items()}
        costs = [(names[i], flops) for i, flops, _, _ in counter.calls if flops > 0]
        t = clock(fn)
        if phase == "backward":  # the last counted op is the backward; the others ran in the forward above
            t -= sum(seconds.get(name, 0.0) for name, _ in costs[:-1])
            costs = costs[-1:]
        if len(costs) != 1:
            continue  # several counted ops in one case: no single op to credit
        name, flops = costs[0]
        seconds[name] = t
        body = max(t - dispatch_s, 0.1 * t)
        out[name] = round(min(1.0, max(1e-4, flops / (body * peak_flops))), 5)
    return out
