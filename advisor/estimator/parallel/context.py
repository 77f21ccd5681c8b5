"""Context parallelism (ring attention, as Megatron-LM's context parallelism runs it): the sequence split over
`cp` ranks.

Every op of the model works on s/cp tokens, so its per-sample work and activations are divided by cp (causal
attention too, with the load-balanced split of the sequence into 2·cp chunks). Attention needs every key:
each attention layer passes its K and V chunk around the ring in cp−1 steps, each step overlapped with the
blockwise attention over the chunk just received; the backward pass sends K, V and their gradients (twice
the volume) the same way. A chunk is `2 · b · (s/cp) · kv_heads_per_rank · head_dim` values in the compute
dtype, where tensor parallelism leaves each rank kv_heads/tp heads (at least one). What the attention compute
of the layer does not hide is exposed.
"""

from __future__ import annotations

import numpy as np

from advisor.errors import UserError
from advisor.estimator.layout import Layout, divisors, nearest
from advisor.profiler.schema import Structure


def kv_chunk_bytes(structure: Structure, micro, cp, tp, width: float):
    """Bytes of one ring step's K and V chunk on one rank."""
    heads, kv = structure.heads or 1, structure.kv_heads or structure.heads or 1
    head_dim = (structure.hidden or 0) / heads
    return 2 * micro * (structure.seq_len or 0) / cp * np.maximum(kv / tp, 1.0) * head_dim * width


def ring(t_step, cp, attention_fwd, attention_bwd, recompute_full):
    """(total, exposed) seconds of one attention layer's ring exchange per micro-batch: cp−1 steps forward,
    cp−1 steps of twice the volume backward, and the forward again under full recomputation."""
    steps = np.maximum(cp - 1, 0)
    fwd, bwd = steps * t_step, steps * 2 * t_step
    repeat = np.where(recompute_full, 2.0, 1.0)
    total = repeat * fwd + bwd
    exposed = repeat * np.maximum(0.0, fwd - attention_fwd) + np.maximum(0.0, bwd - attention_bwd)
    return total, exposed


def check(layout: Layout, structure: Structure | None) -> list[str]:
    if layout.cp == 1:
        return []
    seq = structure.seq_len if structure is not None else None
    if structure is None or structure.attention is None or not seq:
        raise UserError(
            f"--cp {layout.cp}: context parallelism splits the sequence of attention layers, and this profile has "
            "none the profiler recognised",
            "use --cp 1",
        )
    if seq % layout.cp:
        valid = [d for d in divisors(seq) if d <= max(4 * layout.cp, 16)]
        raise UserError(
            f"--cp {layout.cp} does not divide the sequence of {seq} tokens (cp must divide the sequence)",
            f"use --cp {' or '.join(map(str, nearest(layout.cp, valid)))}",
        )
    return []
