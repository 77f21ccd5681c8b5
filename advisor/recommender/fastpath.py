"""What keeps thousands of estimates cheap, besides the estimator's own per-op cache.

A candidate whose memory does not fit even at a micro-batch of one sample is rejected without estimating
its time: `memory_for` at micro-batch 1 answers that, and the answer is the same for every node count
under DDP and every pricing, so it is memoized. Only devices with their own memory take this path (a
CPU's capacity is its share of the host, which the estimator works out per instance); everything else,
the micro-batch fit included, is left to `estimate()` itself so the two can never disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.estimator.config import Config
from advisor.estimator.memory import Memory, memory_for, repeated_blocks

if TYPE_CHECKING:
    from advisor.profiler.schema import Profile


def too_big(profile: Profile, config: Config, device, eff, memo: dict) -> Memory | None:
    """The memory at micro-batch 1 when even that does not fit on `device`, else None."""
    if device.memory_bytes is None:
        return None
    blocks = memo.get("blocks")
    if blocks is None:
        blocks = memo["blocks"] = repeated_blocks(profile)
    shard = config.world if config.strategy == "fsdp" else 1
    key = (device.id, config.precision, config.strategy, shard, config.checkpointing)
    if key not in memo:
        memory = memory_for(profile, config, device, eff, None, 1, blocks)
        memo[key] = None if memory.fits else memory
    return memo[key]
