"""Memory per device: weights, gradients, optimizer state, activations, temporaries, reserve.

Weights, gradients and optimizer state follow from the parameter count, the precision and the optimizer
(mixed precision Adam: 4 + 4 + 8 = 16 bytes per parameter, as PyTorch autocast keeps fp32 weights; pure
bf16: 2 + 2 + 4). FSDP (full shard) divides all three by the data-parallel degree. Activations saved for
backward come from the profile at the micro-batch; with activation checkpointing only the blocks'
inputs are kept (the profile's checkpoint_bytes) plus one block being recomputed. The framework's
reserve (CUDA context, allocator fragmentation) comes from the device family's efficiency profile.
"""

from __future__ import annotations

from pydantic import BaseModel

from advisor.catalog.schema import Device, Efficiency, Instance
from advisor.estimator.config import COMPUTE_DTYPE, DTYPE_BYTES, OPTIMIZER_STATES, PARAM_BYTES, Config


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


def memory_for(
    profile, config: Config, device: Device, eff: Efficiency, instance: Instance | None, micro: int
) -> Memory:
    params = profile.trainable_parameters
    frozen = profile.parameters - params
    width = PARAM_BYTES[config.precision]
    shard = config.world if config.strategy == "fsdp" else 1
    weights = (params + frozen) * width / shard
    grads = params * width / shard
    states = OPTIMIZER_STATES.get(profile.optimizer, 2) * params * width / shard
    mem = profile.memory
    scale = activation_scale(profile.precision, config.precision)
    saved = mem.activation_bytes.at(micro)
    if config.checkpointing:
        kept = mem.checkpoint_bytes.at(micro)
        # plus one block's activations while it is recomputed: the saved bytes spread over the blocks
        blocks = max(getattr(mem, "checkpoint_blocks", 1) or 1, 1)
        saved = min(saved, kept + saved / blocks)
    activations = saved * scale
    temporaries = mem.temporary_peak_bytes.at(micro) * scale
    if config.strategy == "fsdp" and shard > 1:
        # FSDP gathers one unit's full weights at a time (in the compute dtype) on top of the shard.
        blocks = max(getattr(mem, "checkpoint_blocks", 1) or 1, 1)
        temporaries += 2 * (params + frozen) * DTYPE_BYTES[COMPUTE_DTYPE[config.precision]] / blocks
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
