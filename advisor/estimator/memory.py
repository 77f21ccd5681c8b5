"""Memory per device: weights, gradients, optimizer state, activations, temporaries, reserve.

Weights, gradients and optimizer state follow from the parameter count, the precision and the optimizer
(mixed precision Adam: 4 + 4 + 8 = 16 bytes per parameter, as PyTorch autocast keeps fp32 weights and
gradients; pure bf16: 2 + 2 + 4). FSDP (full shard, ZeRO-3) divides all three by the data-parallel
degree N, 16Ψ/N, and holds one unit's gathered weights (plus the prefetched next unit) in the compute
dtype on top. DDP keeps its gradient buckets, a second copy of the gradients. Activations saved for
backward come from the profile at the micro-batch; with activation checkpointing the profile's
checkpoint_bytes are kept instead (the blocks' inputs, what is saved outside them, and one block's
saved tensors while it is recomputed). The reserve (CUDA context, workspaces, allocator fragmentation)
comes from the device family's efficiency profile.

Everything but activations and temporaries is independent of the micro-batch, and those two are linear
in it (the profile's `Linear`), so the largest micro-batch that fits has a closed form (`max_micro_batch`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pydantic import BaseModel

from advisor.catalog.schema import Device, Efficiency, Instance
from advisor.estimator.config import Config
from advisor.vocab import COMPUTE_DTYPE, DTYPE_BYTES, OPTIMIZER_STATES, PARAM_BYTES

if TYPE_CHECKING:
    from advisor.profiler.schema import Profile


class Memory(BaseModel):
    parameter_bytes: float
    gradient_bytes: float
    optimizer_state_bytes: float
    activation_bytes: float
    temporary_bytes: float
    reserve_bytes: float
    total_bytes: float
    capacity_bytes: float | None
    fits: bool
    headroom_bytes: float | None


def activation_scale(profiled: str, target: str) -> float:
    """Activations scale with the compute dtype's width when a profile is reused at another precision."""
    return DTYPE_BYTES[COMPUTE_DTYPE[target]] / DTYPE_BYTES[COMPUTE_DTYPE[profiled]]


def capacity(device: Device, instance: Instance | None, per_node: int) -> float | None:
    """Bytes one device may use: its own memory, or for a CPU its share of the host's memory."""
    if device.memory_bytes is not None:
        return device.memory_bytes
    if instance is not None and instance.host_memory_bytes:
        return instance.host_memory_bytes / max(per_node, 1)
    return None


def repeated_blocks(profile) -> int:
    """How many repeated blocks (transformer layers, residual blocks) the model has, from the profile's
    module patterns: ops under `layers.*` ran once per block, so the fewest calls of any forward op under
    that pattern is the number of blocks. Summed over distinct patterns; 1 when nothing repeats."""
    fewest: dict[str, int] = {}
    for op in profile.ops:
        if op.phase != "forward" or "*" not in op.module:
            continue
        prefix = op.module[: op.module.index("*") + 1]
        fewest[prefix] = min(fewest.get(prefix, op.count), op.count)
    return max(1, sum(fewest.values()))


def optimizer_states(profile) -> float:
    """Optimizer state tensors per parameter: known optimizers by name, else the profile's own ratio."""
    known = OPTIMIZER_STATES.get(profile.optimizer)
    if known is not None:
        return known
    mem = profile.memory
    return mem.optimizer_state_bytes / mem.parameter_bytes if mem.parameter_bytes else 2.0


def memory_for(
    profile: Profile,
    config: Config,
    device: Device,
    eff: Efficiency,
    instance: Instance | None,
    micro: int,
    blocks: int | None = None,
) -> Memory:
    """Memory per device at micro-batch `micro`. `blocks` (repeated_blocks) may be passed to save work."""
    params = profile.trainable_parameters
    frozen = profile.parameters - params
    width = PARAM_BYTES[config.precision]
    compute_width = DTYPE_BYTES[COMPUTE_DTYPE[config.precision]]
    shard = config.world if config.strategy == "fsdp" else 1
    weights = (params + frozen) * width / shard
    grads = params * width / shard
    states = optimizer_states(profile) * params * width / shard
    mem = profile.memory
    scale = activation_scale(profile.precision, config.precision)
    saved = mem.activation_bytes.at(micro)
    if config.checkpointing:
        saved = min(saved, mem.checkpoint_bytes.at(micro))
    activations = saved * scale
    temporaries = mem.temporary_peak_bytes.at(micro) * scale
    if config.strategy == "fsdp" and shard > 1:
        # one unit gathered for compute and the next one prefetched, in the compute dtype
        unit = (params + frozen) / (blocks or repeated_blocks(profile))
        temporaries += 2 * unit * compute_width
    elif config.strategy == "ddp" and config.world > 1:
        temporaries += params * width  # DDP's gradient buckets (gradient_as_bucket_view=False, the default)
    cap = capacity(device, instance, config.devices_per_node)
    reserve = eff.memory_reserve_bytes + eff.memory_reserve_fraction * (cap or 0.0)
    total = weights + grads + states + activations + temporaries + reserve
    return Memory(
        parameter_bytes=weights,
        gradient_bytes=grads,
        optimizer_state_bytes=states,
        activation_bytes=activations,
        temporary_bytes=temporaries,
        reserve_bytes=reserve,
        total_bytes=total,
        capacity_bytes=cap,
        fits=cap is None or total <= cap,
        headroom_bytes=None if cap is None else cap - total,
    )


def max_micro_batch(
    profile: Profile, config: Config, device, eff, instance, limit: int, blocks: int | None = None
) -> int:
    """The largest micro-batch ≤ limit that fits (1 when even 1 does not): memory is linear in the
    micro-batch, so two evaluations give the line and a third confirms the answer against rounding."""
    one = memory_for(profile, config, device, eff, instance, 1, blocks)
    if not one.fits or limit <= 1:
        return 1
    if one.capacity_bytes is None:  # nothing to fit into (a CPU without a known host memory)
        return limit
    slope = memory_for(profile, config, device, eff, instance, 2, blocks).total_bytes - one.total_bytes
    if slope <= 0:
        return limit
    best = min(limit, 1 + math.floor((one.capacity_bytes - one.total_bytes) / slope))
    while best > 1 and not memory_for(profile, config, device, eff, instance, best, blocks).fits:
        best -= 1  # floating-point rounding at the boundary: at most a step or two
    return max(best, 1)
