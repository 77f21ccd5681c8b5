"""What would make a configuration that does not fit in memory fit: only changes from the current settings.

Tried in order, each at the micro-batch in use (the one given, else 1): FSDP instead of DDP; activation
checkpointing; a smaller --micro-batch (when one was given); FSDP with checkpointing together; more
devices (more of the instance's devices per node, or more nodes, sharding with FSDP); a device with more
memory (the smallest of the same kind that holds the model with the current settings, naming an instance
that rents it). Each hint says the memory per device it would need. Memory only: `estimate` then tells
how fast the new configuration runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor import units
from advisor.catalog.schema import Catalog, Device, Instance
from advisor.estimator.config import Config
from advisor.estimator.memory import Memory, max_micro_batch, memory_for, repeated_blocks

if TYPE_CHECKING:
    from advisor.profiler.schema import Profile


def node_devices(catalog: Catalog, device: Device) -> tuple[int, Instance | None]:
    """The most devices of this kind one catalog node holds, and that node (0, None when none rents it)."""
    best: tuple[int, Instance | None] = (0, None)
    for inst in catalog.instances.values():
        if inst.device == device.id and device.kind != "cpu" and round(inst.device_count) > best[0]:
            best = (int(round(inst.device_count)), inst)
    return best


def _need(memory: Memory) -> str:
    return f"{units.fmt_bytes(memory.total_bytes)} of {units.fmt_bytes(memory.capacity_bytes or 0)} per device"


def ways_to_fit(profile: Profile, catalog: Catalog, config: Config, limit: int = 6) -> list[str]:
    """Up to `limit` changes, each one line ('--strategy fsdp: 62 GB of 80 GB per device')."""
    device = catalog.devices[config.device]
    eff = catalog.efficiency[device.efficiency]
    instance = catalog.instances.get(config.instance) if config.instance else None
    blocks = repeated_blocks(profile)
    micro = config.micro_batch or 1

    def memory(cfg: Config, dev: Device = device, inst: Instance | None = instance, b: int = micro) -> Memory:
        return memory_for(profile, cfg, dev, catalog.efficiency[dev.efficiency], inst, b, blocks)

    hints: list[str] = []
    fsdp = config.model_copy(update={"strategy": "fsdp"})
    ckpt = config.model_copy(update={"checkpointing": True})
    if config.world > 1 and config.strategy != "fsdp" and (m := memory(fsdp)).fits:
        hints.append(f"--strategy fsdp: {_need(m)}")
    if not config.checkpointing and (m := memory(ckpt)).fits:
        hints.append(f"--checkpointing: {_need(m)}")
    if config.micro_batch and config.micro_batch > 1 and memory(config, b=1).fits:
        best = max_micro_batch(profile, config, device, eff, instance, config.micro_batch - 1, blocks)
        hints.append(f"--micro-batch {best} (the largest that fits; accumulation makes up the global batch)")
    both = config.model_copy(update={"strategy": "fsdp" if config.world > 1 else config.strategy})
    both = both.model_copy(update={"checkpointing": True})
    if not hints and (both != config) and (m := memory(both)).fits:
        flags = ("--strategy fsdp " if both.strategy != config.strategy else "") + "--checkpointing"
        hints.append(f"{flags}: {_need(m)}")
    if not hints:  # more devices only when nothing simpler fits on these
        hints += _more_devices(catalog, config, device, instance, memory, allow_checkpointing=True)
    hints += _larger_device(catalog, config, device, memory)
    return hints[:limit]


def _hint(change: str, flags: str, need: str) -> str:
    return f"{change} {flags}: {need}" if flags else f"{change}: {need}"


def _flags(config: Config, sharded: Config) -> str:
    out = []
    if sharded.strategy != config.strategy:
        out.append("--strategy fsdp")
    if sharded.checkpointing and not config.checkpointing:
        out.append("--checkpointing")
    return " ".join(out)


def _more_devices(
    catalog: Catalog, config: Config, device: Device, instance: Instance | None, memory, allow_checkpointing: bool
) -> list[str]:
    """The fewest devices that hold it sharded with FSDP (with checkpointing too when nothing simpler fits)."""
    if device.kind == "cpu":
        return []
    for checkpointing in sorted({config.checkpointing, allow_checkpointing or config.checkpointing}):
        base = config.model_copy(update={"strategy": "fsdp", "checkpointing": checkpointing})
        if instance is not None:
            have = int(round(instance.device_count))
            if config.devices_per_node < have:
                cfg = base.model_copy(update={"devices_per_node": have})
                if (m := memory(cfg)).fits:
                    return [_hint(f"--count {have}", _flags(config, cfg), _need(m))]
            nodes = config.nodes * 2
            while nodes <= instance.max_nodes:
                cfg = base.model_copy(update={"nodes": nodes, "devices_per_node": have})
                if (m := memory(cfg)).fits:
                    return [_hint(f"--nodes {nodes}", _flags(config, cfg), f"{_need(m)} ({nodes * have} devices)")]
                nodes *= 2
        else:
            most, holder = node_devices(catalog, device)
            count = config.devices_per_node * 2
            while count <= most:
                cfg = base.model_copy(update={"devices_per_node": count})
                if (m := memory(cfg)).fits:
                    return [_hint(f"--count {count}", _flags(config, cfg), _need(m))]
                count *= 2
            if holder is not None:
                nodes = 2
                while nodes <= holder.max_nodes:
                    cfg = base.model_copy(update={"devices_per_node": most, "nodes": nodes, "instance": holder.id})
                    if (m := memory(cfg, inst=holder)).fits:
                        where = f"-H {holder.name} --nodes {nodes}"
                        return [_hint(where, _flags(config, cfg), f"{_need(m)} ({nodes * most} devices)")]
                    nodes *= 2
    return []


def _larger_device(catalog: Catalog, config: Config, device: Device, memory) -> list[str]:
    """The smallest device of the same kind with more memory that holds it with the current settings."""
    if device.memory_bytes is None:
        return []
    bigger = sorted(  # the same software stack first (CUDA stays CUDA), then the least memory that holds it
        (d for d in catalog.devices.values() if d.kind == device.kind and d.training and d.memory_bytes),
        key=lambda d: (d.stack != device.stack, d.memory_bytes, d.id),
    )
    for dev in bigger:
        if dev.memory_bytes <= device.memory_bytes or dev.id == device.id:
            continue
        cfg = config.model_copy(update={"device": dev.id, "instance": None})
        if (m := memory(cfg, dev=dev, inst=None)).fits:
            _, holder = node_devices(catalog, dev)
            rent = f", e.g. -H {holder.name}" if holder is not None else ""
            return [f"a device with more memory: {dev.id} ({units.fmt_bytes(dev.memory_bytes)}){rent}: {_need(m)}"]
    return []
