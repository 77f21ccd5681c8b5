"""Tensor parallelism (Megatron-LM) and sequence parallelism: which work `tp` divides, its traffic, its rules.

Which ops shard is read from the profile, not from model code. Inside the repeated blocks every matmul is
split (column-parallel then row-parallel linears, attention by heads), and so are the ops between them:
those whose tensors are not hidden-wide (the heads `[b, a, s, d]`, the MLP's `[b, s, 4h]`). Ops on
hidden-wide tensors (norms, residual adds, dropout, the casts of the linears' inputs) run whole on every
rank unless sequence parallelism splits them along the sequence. Weight casts follow their weights. Outside
the blocks the head and the loss are vocabulary-parallel (their tensors are vocabulary-wide), the embedding
lookup and the final norm stay whole. Parameters: matrices split, vectors (norms, biases) replicated.

Traffic (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", §4):
per block and micro-batch two all-reduces of `b·s·h` activations in the forward pass and two in the backward
pass; with sequence parallelism each becomes an all-gather plus a reduce-scatter of the same volume (the same
time in the ring model); full recomputation runs the forward two again. They sit on the critical path (no
overlap is assumed), inside the fast domain when tp fits in it.

Activations per block (Korthikanti Table 2, with R the hidden-wide part, S the rest and C the attention
scores of the profile's saved tensors): no SP `R + (S + C)/t`, SP `(R + S + C)/t`; selective recomputation
drops C; full recomputation keeps the block input `I` (`/t` with SP).
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.errors import UserError
from advisor.estimator.layout import Layout, divisors, nearest
from advisor.profiler.schema import Profile, Structure
from advisor.profiler.structure import in_block, is_weight_op, shapes_of, writes_weight


@dataclass(frozen=True)
class Roles:
    """Per profile record: where it runs (before|block|after|optimizer), whether tp splits it, whether it is
    the attention core (selective recomputation, ring attention's overlap), whether it is a block weight matmul
    (a linear layer's forward, input-gradient or weight-gradient GEMM: what FP8 recipes such as Transformer
    Engine's run on the FP8 units, all three by default), whether it is the forward cast of a weight to the
    compute dtype (what autocast does on every micro-batch, and runs that keep 16-bit weights never do)."""

    region: tuple[str, ...]
    sharded: tuple[bool, ...]
    core: tuple[bool, ...]
    block_matmul: tuple[bool, ...]
    weight_cast: tuple[bool, ...] = ()


def _scores(shapes: list[tuple[int, ...]], heads: int | None) -> bool:
    """Whether a tensor is an attention score matrix: [b, heads, s, s], or [b·heads, s, s]."""
    if not heads:
        return False
    for s in shapes:
        if len(s) >= 3 and s[-1] == s[-2] > 1:
            if (len(s) == 4 and s[1] == heads) or (len(s) == 3 and s[0] % heads == 0):
                return True
    return False


def roles(profile: Profile, structure: Structure | None) -> Roles:
    """Classify every record of `profile` (see the module docstring)."""
    n = len(profile.ops)
    if structure is None:  # nothing repeats: every op is 'before' the (absent) blocks, nothing splits
        region = tuple("optimizer" if o.phase == "optimizer" else "before" for o in profile.ops)
        return Roles(region, (False,) * n, (False,) * n, (False,) * n, (False,) * n)
    prefix, hidden, heads, batch = structure.block_module, structure.hidden, structure.heads, profile.batch_size
    fitted = profile.linear_in_batch
    first_block = next((i for i, o in enumerate(profile.ops) if o.phase == "forward" and in_block(o.module, prefix)), n)
    before_modules = {o.module for o in profile.ops[:first_block] if o.phase == "forward" and o.module}
    region, sharded, core, block_mm, casts = [], [], [], [], []
    for i, op in enumerate(profile.ops):
        if op.phase == "optimizer":
            where = "optimizer"
        elif in_block(op.module, prefix):
            where = "block"
        elif op.phase == "forward":
            where = "before" if i < first_block else "after"
        else:
            where = "before" if op.module in before_modules else "after"
        shapes = shapes_of(op.shapes)
        # a weight matmul reads a weight (forward, input gradient) or writes one (the weight gradient gᵀ·x,
        # whose output does not grow with the batch): the three GEMMs of a linear layer
        weight = op.category == "matrix" and (is_weight_op(op, batch, fitted) or writes_weight(op, batch, fitted))
        total = op.bytes_read.at(batch) + op.bytes_written.at(batch)
        fixed = op.bytes_read.fixed + op.bytes_written.fixed
        weight_op = total > 0 and fixed > 0.5 * total
        if op.category == "matrix" or weight_op:
            split = True  # matmuls, and the casts of the weights they use
        else:  # hidden-wide: whole on every rank; lists of tensors (no shape: concatenations of heads) split
            split = not shapes or hidden is None or shapes[0][-1:] != (hidden,)
        is_core = (
            where == "block"
            and structure.attention is not None
            and ((op.category == "matrix" and not weight) or (op.category != "matrix" and _scores(shapes, heads)))
        )
        region.append(where)
        sharded.append(where != "optimizer" and split)
        core.append(is_core)
        block_mm.append(where == "block" and weight)
        casts.append(op.phase == "forward" and op.op == "aten._to_copy" and op.category == "memory" and weight_op)
    return Roles(tuple(region), tuple(sharded), tuple(core), tuple(block_mm), tuple(casts))


def parameter_parts(profile: Profile, structure: Structure | None) -> dict[str, float]:
    """Parameters by (before|block|after)_(sharded|replicated). Profiles without the split (written before
    the profiler recorded it) count every parameter as a split block weight."""
    parts = dict(structure.parameters) if structure is not None else {}
    if not parts:
        return {"block_sharded": float(profile.parameters)}
    return {k: float(v) for k, v in parts.items()}


def device_parameters(parts: dict[str, float], tp, blocks: int, n_blocks, first, last):
    """Parameters held by one device of a stage with `n_blocks` blocks, the first and/or last stage (arrays or
    bools), under tensor-parallel degree `tp`."""
    get = parts.get
    block = n_blocks / blocks * (get("block_sharded", 0.0) / tp + get("block_replicated", 0.0))
    before = get("before_sharded", 0.0) / tp + get("before_replicated", 0.0)
    after = get("after_sharded", 0.0) / tp + get("after_replicated", 0.0)
    return block + first * before + last * after


def block_weights(parts: dict[str, float], tp, blocks: int, n_blocks):
    """The split block weights on one device (what an FP8 recipe keeps FP8 copies of)."""
    return n_blocks / blocks * parts.get("block_sharded", 0.0) / tp


def all_reduces_per_block(recompute: str) -> int:
    """Tensor-parallel all-reduces (or all-gather + reduce-scatter pairs) per block and micro-batch."""
    return 6 if recompute == "full" else 4


def check(layout: Layout, structure: Structure | None, domain: int) -> list[str]:
    """Rules of tp (UserError) and notes about it (returned)."""
    notes: list[str] = []
    if layout.tp == 1:
        return notes
    heads = structure.heads if structure is not None else None
    if heads is None:
        raise UserError(
            f"--tp {layout.tp}: tensor parallelism splits attention heads, and this profile has no attention layer "
            "the profiler recognised",
            "use --tp 1",
        )
    if heads % layout.tp:
        valid = [d for d in divisors(heads) if d <= max(layout.tp * 4, 8)]
        raise UserError(
            f"--tp {layout.tp} does not divide the {heads} attention heads (tp must divide the heads)",
            f"use --tp {' or '.join(map(str, nearest(layout.tp, valid)))}",
        )
    if layout.tp > domain:
        notes.append(
            f"tensor parallelism over {layout.tp} devices spans more than one fast domain ({domain} devices): its "
            "all-reduces cross the network, which is rarely worth it"
        )
    return notes
