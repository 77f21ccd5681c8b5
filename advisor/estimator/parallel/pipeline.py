"""Pipeline parallelism: the repeated blocks split into `pp` stages, run with the 1F1B schedule (Narayanan et
al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", §2.2).

- Stages: the blocks in order, `blocks // pp` each, the remainder going to the middle stages first (the first
  stage also runs the embedding, the last one the head and the loss), so an uneven split is allowed and its
  slowest stage sets the pace; with v interleaved chunks per stage each chunk holds about blocks/(pp·v).
- Time of a step with m micro-batches: the slowest stage's forward + backward per micro-batch (T_max) m times,
  plus the bubble: the other stages' share of the fill and drain, `(Σ T_s − T_max) / v`, which is
  `(pp−1)/m` of the work for even stages and `(pp−1)/(v·m)` with v interleaved chunks per stage.
- Point-to-point: per micro-batch and chunk boundary one send of the activations `b·s·h` forward and one of
  their gradient backward (`/tp` with sequence parallelism, `/cp` under context parallelism). Steady-state
  sends overlap the compute (asynchronous p2p); the fill and drain ones, 2·(pp−1)·v, are exposed.
- Memory: the first stage keeps min(m, pp) micro-batches of activations in flight (1F1B); interleaving
  multiplies that by `1 + (pp−1)/(pp·v)` (Korthikanti et al. 2022, §4.2.3); the last stage keeps one.
"""

from __future__ import annotations

import functools

import numpy as np

from advisor.errors import UserError
from advisor.estimator.layout import Layout, nearest
from advisor.profiler.schema import Structure


def stage_blocks(blocks: int, pp: int) -> list[int]:
    """Blocks on each stage: as even as possible, extra blocks on the middle stages first, then the first."""
    return list(_stage_blocks(blocks, pp))


@functools.lru_cache(maxsize=4096)
def _stage_blocks(blocks: int, pp: int) -> tuple[int, ...]:
    base, extra = divmod(blocks, pp)
    order = list(range(1, pp - 1)) + [0, pp - 1]
    counts = [base] * pp
    for stage in order[:extra]:
        counts[stage] += 1
    return tuple(counts)


def stage_shape(blocks: int, pp: int) -> tuple[int, int, int]:
    """(blocks on the first stage, the most on a middle stage (0 without one), on the last stage)."""
    counts = stage_blocks(blocks, pp)
    if pp == 1:
        return counts[0], 0, counts[0]
    return counts[0], max(counts[1:-1], default=0), counts[-1]


def in_flight(pp, vpp, m, stage: int = 0):
    """Micro-batches of activations stage `stage` (0 = first) keeps under 1F1B (interleaved when vpp > 1)."""
    kept = np.minimum(m, np.maximum(pp - stage, 1))
    return np.where((vpp > 1) & (stage == 0), kept * (1 + (pp - 1) / (pp * vpp)), kept)


def step_parts(t_first, t_mid, t_last, t_all, pp, vpp, m):
    """(time of the slowest stage's m micro-batches, bubble) from per-micro-batch stage times. `t_all` is the
    sum over all stages (one micro-batch through the whole pipeline)."""
    t_max = np.where(pp == 1, t_all, np.maximum(np.maximum(t_first, t_last), t_mid))
    bubble = np.where(pp == 1, 0.0, (t_all - t_max) / vpp)
    return m * t_max, bubble


def check(layout: Layout, structure: Structure | None) -> list[str]:
    notes: list[str] = []
    if layout.pp == 1:
        return notes
    blocks = structure.blocks if structure is not None else 1
    if structure is None or layout.pp > blocks:
        raise UserError(
            f"--pp {layout.pp} is more than the {blocks} repeated blocks of the model (a stage needs one at least)",
            f"use --pp {blocks} or less",
        )
    if layout.vpp > 1 and blocks < layout.pp * layout.vpp:
        valid = [v for v in range(1, blocks // layout.pp + 1)]
        raise UserError(
            f"--vpp {layout.vpp} with --pp {layout.pp}: the interleaved schedule needs a block in each of the "
            f"pp·vpp = {layout.pp * layout.vpp} chunks, and the model has {blocks} blocks",
            f"use --vpp {' or '.join(map(str, nearest(layout.vpp, valid)))}",
        )
    counts = stage_blocks(blocks, layout.pp)
    if min(counts) != max(counts):
        notes.append(f"pipeline stages hold {'/'.join(map(str, counts))} blocks: the slowest stage sets the pace")
    return notes
