"""What makes thousands of estimates cheap: the micro-batch fit, memoized across candidates.

`estimate()` searches for the largest micro-batch that fits (a binary search over `memory_for`) on every
call. That answer does not depend on the node count under DDP (nothing is sharded) and repeats for every
pricing, so the recommender searches once per (device, capacity, precision, strategy, shard degree,
checkpointing, per-device batch) and passes the micro-batch in: the estimate is the same, the search is
not repeated. The search mirrors the estimator's own (estimator/estimate.py `_fit_micro_batch`).
"""

from __future__ import annotations

from advisor.estimator.config import Config
from advisor.estimator.memory import memory_for


def fit_micro_batch(profile, config: Config, device, eff, instance, per_device: int, memo: dict):
    """(micro-batch, None) for the largest micro-batch that fits, or (1, Memory at 1) when even one sample
    does not fit: the candidate is rejected for memory without estimating its time."""
    shard = config.world if config.strategy == "fsdp" else 1
    host = instance.id if device.memory_bytes is None and instance is not None else None
    key = (
        device.id,
        host,
        config.devices_per_node if host else 0,
        config.precision,
        config.strategy,
        shard,
        config.checkpointing,
        per_device,
    )
    found = memo.get(key)
    if found is not None:
        return found
    lo, hi = 1, max(per_device, 1)
    if hi > 1 and memory_for(profile, config, device, eff, instance, hi).fits:  # the usual case: it all fits
        memo[key] = (hi, None)
        return memo[key]
    smallest = memory_for(profile, config, device, eff, instance, lo)
    if not smallest.fits:
        memo[key] = (1, smallest)
        return memo[key]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if memory_for(profile, config, device, eff, instance, mid).fits:
            lo = mid
        else:
            hi = mid - 1
    memo[key] = (lo, None)
    return memo[key]
