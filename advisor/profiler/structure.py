"""The shape of a model that parallel layouts divide, read from a profile's own records (no per-model code).

- The repeated blocks: the module pattern with a `*` whose forward ops do the most FLOPs (`layers.*`), and how
  many there are (the fewest calls of any forward op under it, as each ran once per block at least).
- Attention: a fused attention kernel under the blocks gives heads, KV heads, sequence and head width from its
  query and key shapes (`[b, heads, s, d]`); an unfused one is found by its softmax over a square
  `[b, heads, s, s]` score matrix.
- The hidden size: the width of a block's input (recorded by the profiler), else heads × head width, else the
  input width of the first weight matmul in a block.

Shapes are read from the records' `shapes` text, so profiles written before the profiler stored a structure
give the same answer. Nothing here imports torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from advisor.profiler.schema import OpRecord, Structure

_SHAPE = re.compile(r"\[([0-9, ]*)\]")
FUSED_ATTENTION = ("scaled_dot_product", "flash_attention", "efficient_attention", "cudnn_attention")
SOFTMAX = ("aten._softmax", "aten.softmax", "aten._safe_softmax", "aten._masked_softmax")


def shapes_of(text: str) -> list[tuple[int, ...]]:
    """'[12, 1024, 768], [768]' -> [(12, 1024, 768), (768,)]; lists of tensors ('3 tensors (…)') are skipped."""
    return [tuple(int(x) for x in m.group(1).split(",") if x.strip()) for m in _SHAPE.finditer(text)]


def is_fused_attention(op: str) -> bool:
    return any(k in op for k in FUSED_ATTENTION) and "backward" not in op


def is_weight_op(op: OpRecord, batch: int, fitted: bool = True) -> bool:
    """A matmul with a batch-independent operand (a weight): part of its bytes do not grow with the batch.
    Attention's batched matmuls read only activations. Profiles not fitted in the batch fall back to names."""
    if not fitted:
        return op.op in ("aten.mm", "aten.addmm", "aten.linear")
    return op.bytes_read.fixed > 0.01 * max(op.bytes_read.at(batch), 1.0)


def writes_weight(op: OpRecord, batch: int, fitted: bool = True) -> bool:
    """A matmul whose output does not grow with the batch: a weight gradient (gᵀ·x sums over the batch)."""
    if not fitted:
        return False
    return op.bytes_written.fixed > 0.5 * max(op.bytes_written.at(batch), 1.0)


def block_prefix(ops: Iterable[OpRecord], batch: int) -> tuple[str, int] | None:
    """(module pattern of the repeated blocks, how many) or None when nothing repeats."""
    flops: dict[str, float] = {}
    fewest: dict[str, int] = {}
    for op in ops:
        if op.phase != "forward" or "*" not in op.module:
            continue
        prefix = op.module[: op.module.index("*") + 1]
        flops[prefix] = flops.get(prefix, 0.0) + op.flops.at(batch)
        fewest[prefix] = min(fewest.get(prefix, op.count), op.count)
    if not flops:
        return None
    best = max(flops, key=lambda p: (flops[p], fewest[p]))
    return best, fewest[best]


def in_block(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def derive_structure(
    ops: list[OpRecord],
    batch: int,
    tokens_per_sample: int | None = None,
    hidden: int | None = None,
    parameters: dict[str, int] | None = None,
    fitted: bool = True,
) -> Structure | None:
    """The structure of the profiled model, or None when it has no repeated blocks."""
    found = block_prefix(ops, batch)
    if found is None:
        return None
    prefix, blocks = found
    heads = kv_heads = seq = head_dim = None
    attention = None
    first_k = None
    for op in ops:
        if op.phase != "forward" or not in_block(op.module, prefix):
            continue
        shapes = shapes_of(op.shapes)
        if attention is None and is_fused_attention(op.op) and len(shapes) >= 2 and len(shapes[0]) == 4:
            (_, heads, seq, head_dim), kv_heads = shapes[0], shapes[1][1]
            attention = "fused"
        elif attention is None and op.op in SOFTMAX and shapes and len(shapes[0]) >= 3:
            score = shapes[0]
            if score[-1] == score[-2]:
                seq = score[-1]
                heads = score[-3] if len(score) == 4 else max(1, score[0] // max(batch, 1))
                kv_heads, attention = heads, "unfused"
        if first_k is None and op.category == "matrix" and is_weight_op(op, batch, fitted):
            two_d = [s for s in shapes if len(s) >= 2]
            if two_d:
                first_k = two_d[0][-1]
    if hidden is None:
        hidden = heads * head_dim if heads and head_dim else first_k
    return Structure(
        blocks=blocks,
        block_module=prefix,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        seq_len=seq or tokens_per_sample,
        attention=attention,
        parameters=dict(parameters or {}),
    )
