"""One profile on one configuration: step time with its parts, memory fit, total time and cost.

    step = a · (t_fwd + t_bwd [+ t_fwd again with checkpointing]) + t_opt + exposed communication

for `a` accumulation micro-batches of size b per device. Data parallel (DDP) all-reduces the gradients
once per step, overlapped with the last backward pass as DDP's buckets do; the last bucket is never
hidden. FSDP all-gathers the weights in the forward and again in the backward pass and reduce-scatters
the gradients, each overlapped with the compute of its pass (prefetching), for every micro-batch.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from advisor.catalog.schema import Catalog, Device, Efficiency, Instance
from advisor.errors import UserError
from advisor.estimator.comm import Fabric, collective_time, fabric_for
from advisor.estimator.config import COMPUTE_DTYPE, DTYPE_BYTES, PARAM_BYTES, Config, Workload
from advisor.estimator.memory import Memory, memory_for
from advisor.estimator.roofline import byte_scale, effective_dtype, op_time

DDP_BUCKET_BYTES = 25e6  # torch DistributedDataParallel's default bucket_cap_mb


class Phase(BaseModel):
    seconds: float
    compute_s: float
    memory_s: float
    overhead_s: float
    flops: float
    bytes: float
    bound: str  # "compute" | "memory" | "overhead"


class Comm(BaseModel):
    total_s: float
    exposed_s: float
    bytes_per_step: float
    intra: str
    inter: str


class Estimate(BaseModel):
    config: Config
    device: str
    instance: str | None
    micro_batch: int
    accumulation: int
    global_batch: int
    step_time_s: float
    phases: dict[str, Phase]
    compute_s: float
    memory_bound_s: float
    overhead_s: float
    comm: Comm
    samples_per_s: float
    mfu: float
    scaling_efficiency: float
    memory: Memory
    steps: float | None = None
    total_time_s: float | None = None
    node_usd_per_hour: float | None = None
    cost_usd: float | None = None
    assumptions: list[str]


def _bound(phase: Phase) -> str:
    parts = {"compute": phase.compute_s, "memory": phase.memory_s, "overhead": phase.overhead_s}
    return max(parts, key=parts.get)


def phase_times(profile, device: Device, eff: Efficiency, precision: str, micro: int) -> dict[str, Phase]:
    """Roofline time of each phase (forward, backward, optimizer) at micro-batch `micro` on one device."""
    sums: dict[str, list[float]] = {}
    for op in profile.ops:
        dtype = effective_dtype(op.dtype, op.category, profile.precision, precision)
        scale = byte_scale(op.dtype, dtype) if dtype != op.dtype else 1.0
        nbytes = (op.bytes_read.at(micro) + op.bytes_written.at(micro)) * scale
        t = op_time(device, eff, op.flops.at(micro), nbytes, op.count, op.category, dtype, phase=op.phase, op=op.op)
        acc = sums.setdefault(op.phase, [0.0] * 6)
        for i, value in enumerate((t.seconds, t.compute_s, t.memory_s, t.overhead_s, t.flops, t.bytes)):
            acc[i] += value
    phases = {}
    for name in ("forward", "backward", "optimizer"):
        s, c, m, o, f, b = sums.get(name, [0.0] * 6)
        phase = Phase(seconds=s, compute_s=c, memory_s=m, overhead_s=o, flops=f, bytes=b, bound="compute")
        phase.bound = _bound(phase)
        phases[name] = phase
    return phases


def check_precision(device: Device, precision: str) -> None:
    dtype = COMPUTE_DTYPE[precision]
    have = device.dtypes()
    if dtype == "tf32" and "tf32" not in have and "fp32" in have:
        return  # tf32 requested where there is none: it computes in fp32 (an assumption is recorded)
    if dtype not in have:
        options = [p for p, d in COMPUTE_DTYPE.items() if d in have]
        raise UserError(
            f"{device.name} ({device.id}) cannot compute in {dtype} (precision {precision})",
            f"use --precision {' or '.join(options)}",
        )


def _comm(profile, config: Config, fabric: Fabric, phases: dict[str, Phase], accum: int) -> Comm:
    world, per_node, nodes = config.world, config.devices_per_node, config.nodes
    params = profile.parameters
    if world <= 1 or config.strategy == "single":
        return Comm(total_s=0, exposed_s=0, bytes_per_step=0, intra=fabric.intra_type, inter=fabric.inter_type)
    grad_bytes = profile.trainable_parameters * PARAM_BYTES[config.precision]
    fwd, bwd = phases["forward"].seconds, phases["backward"].seconds
    if config.strategy == "ddp":
        total = collective_time("all_reduce", grad_bytes, per_node, nodes, fabric)
        last_bucket = collective_time("all_reduce", min(DDP_BUCKET_BYTES, grad_bytes), per_node, nodes, fabric)
        exposed = max(total - bwd, last_bucket)
        moved = grad_bytes
    else:  # fsdp: per micro-batch, all-gather (fwd), all-gather (bwd), reduce-scatter (bwd)
        weights = params * DTYPE_BYTES[COMPUTE_DTYPE[config.precision]]
        gather = collective_time("all_gather", weights, per_node, nodes, fabric)
        scatter = collective_time("reduce_scatter", grad_bytes, per_node, nodes, fabric)
        per_micro = max(0.0, gather - fwd) + max(0.0, gather + scatter - bwd)
        total = accum * (2 * gather + scatter)
        exposed = accum * per_micro
        moved = accum * (2 * weights + grad_bytes)
    return Comm(
        total_s=total, exposed_s=exposed, bytes_per_step=moved, intra=fabric.intra_type, inter=fabric.inter_type
    )


def _fit_micro_batch(profile, config, device, eff, instance, per_device: int) -> int:
    """The largest micro-batch ≤ per_device that fits in memory (memory grows with the batch)."""
    lo, hi = 1, max(per_device, 1)
    if not memory_for(profile, config, device, eff, instance, lo).fits:
        return 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if memory_for(profile, config, device, eff, instance, mid).fits:
            lo = mid
        else:
            hi = mid - 1
    return lo


def billed_cost(seconds: float, hourly: float, nodes: int, instance: Instance) -> float:
    """Price × nodes × billed time, rounding up to the billing granularity and the minimum."""
    p = instance.pricing
    billed = max(seconds, p.minimum_billed_s)
    billed = math.ceil(billed / p.billing_granularity_s - 1e-9) * p.billing_granularity_s
    return hourly * nodes * billed / 3600.0


def steps_for(profile, workload: Workload | None, global_batch: int) -> float | None:
    if workload is None or workload.empty():
        return None
    if workload.steps is not None:
        return workload.steps
    if workload.samples is not None:
        return math.ceil(workload.samples * (workload.epochs or 1) / global_batch)
    if not profile.tokens_per_sample:
        raise UserError(
            f"profile {profile.name} has no tokens per sample, so --tokens cannot be turned into steps",
            "give --samples or --steps",
        )
    return math.ceil(workload.tokens / (global_batch * profile.tokens_per_sample))


def estimate(
    profile, catalog: Catalog, config: Config, workload: Workload | None = None, cache: dict | None = None
) -> Estimate:
    """One configuration. `cache` (any dict, reused across calls for the same profile) memoizes the per-op
    roofline by (device, efficiency, precision, micro-batch), which is most of the work when many
    configurations share a device (the recommender)."""
    device = catalog.devices[config.device]
    eff = catalog.efficiency[device.efficiency]
    instance = catalog.instances.get(config.instance) if config.instance else None
    check_precision(device, config.precision)
    assumptions: list[str] = []
    if config.world > 1 and config.strategy == "single":
        config = config.model_copy(update={"strategy": "ddp"})
        assumptions.append("more than one device: data parallel (DDP)")
    world = config.world
    per_device = (config.global_batch + world - 1) // world if config.global_batch else None
    if config.micro_batch:
        micro = config.micro_batch
    else:
        micro = _fit_micro_batch(profile, config, device, eff, instance, per_device or profile.batch_size)
    accum = max(1, math.ceil(per_device / micro)) if per_device else 1
    global_batch = config.global_batch or micro * world
    if per_device and micro * accum * world != global_batch:
        assumptions.append(
            f"global batch {global_batch} runs as {micro * accum * world} (micro-batch {micro} × {accum} × {world})"
        )
        global_batch = micro * accum * world
    key = (device.id, eff.id, config.precision, micro)
    phases = cache.get(key) if cache is not None else None
    if phases is None:
        phases = phase_times(profile, device, eff, config.precision, micro)
        if cache is not None:
            cache[key] = phases
    fwd, bwd, opt = phases["forward"], phases["backward"], phases["optimizer"]
    compute_pass = fwd.seconds + bwd.seconds + (fwd.seconds if config.checkpointing else 0.0)
    opt_s = opt.seconds / (world if config.strategy == "fsdp" else 1)
    fabric = fabric_for(device, eff, instance, config.devices_per_node)
    comm = _comm(profile, config, fabric, phases, accum)
    step = accum * compute_pass + opt_s + comm.exposed_s
    recompute = fwd.seconds if config.checkpointing else 0.0
    parts = [fwd, bwd] + ([fwd] if config.checkpointing else [])
    compute_s = accum * sum(p.compute_s for p in parts) + opt.compute_s
    memory_s = accum * sum(p.memory_s for p in parts) + opt.memory_s
    overhead_s = accum * sum(p.overhead_s for p in parts) + opt.overhead_s
    model_flops = world * accum * (fwd.flops + bwd.flops)  # recompute is not useful work
    peak = device.peak(COMPUTE_DTYPE[config.precision], "matrix") or device.peak("fp32", "vector") or 1.0
    mfu = model_flops / (step * world * peak) if step > 0 else 0.0
    single = accum * compute_pass + opt.seconds
    memory = memory_for(profile, config, device, eff, instance, micro)
    if recompute:
        phases = {**phases, "recompute": fwd}
    est = Estimate(
        config=config,
        device=device.id,
        instance=instance.id if instance else None,
        micro_batch=micro,
        accumulation=accum,
        global_batch=global_batch,
        step_time_s=step,
        phases=phases,
        compute_s=compute_s,
        memory_bound_s=memory_s,
        overhead_s=overhead_s,
        comm=comm,
        samples_per_s=global_batch / step if step > 0 else 0.0,
        mfu=mfu,
        scaling_efficiency=single / step if step > 0 else 1.0,
        memory=memory,
        assumptions=assumptions + _assumptions(device, eff, config, profile),
    )
    steps = steps_for(profile, workload, global_batch)
    if steps is not None:
        est.steps = steps
        est.total_time_s = steps * step
        if instance is not None:
            hourly = instance.hourly_usd(spot=config.spot)
            if hourly is not None:
                est.node_usd_per_hour = hourly
                est.cost_usd = billed_cost(est.total_time_s, hourly, config.nodes, instance)
    return est


def _assumptions(device: Device, eff: Efficiency, config: Config, profile) -> list[str]:
    out = [
        f"peaks: {device.name} datasheet ({device.source}, as of {device.as_of})",
        f"efficiency profile {eff.id}: {eff.note}",
        f"per-op overhead {eff.op_overhead_s * 1e6:.3g} µs",
    ]
    if COMPUTE_DTYPE[config.precision] == "tf32" and "tf32" not in device.dtypes():
        out.append(f"{device.id} has no tf32: matrix ops run in fp32")
    if profile.precision != config.precision:
        out.append(f"profile made under {profile.precision}, estimated under {config.precision}: dtypes remapped")
    if not profile.linear_in_batch:
        out.append("the profile's cost is not linear in the batch: other batch sizes are approximate")
    return out
