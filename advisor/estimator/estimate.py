"""One profile on one configuration: step time with its parts, memory fit, total time and cost.

    step = a · (t_fwd + t_bwd [+ t_fwd again with checkpointing]) + t_opt + exposed communication

for `a` accumulation micro-batches of size b per device (b is the largest that fits, unless given). Data
parallel (DDP) all-reduces the gradients once per step, overlapped with the last backward pass as DDP's
buckets do; the last bucket is never hidden. FSDP all-gathers the weights in the forward and again in
the backward pass and reduce-scatters the gradients, each overlapped with the compute of its pass
(prefetching), for every micro-batch; each device steps the optimizer on its 1/N shard.
Scaling efficiency = the step without communication ÷ the step with it. MFU counts forward and backward
FLOPs (not the recompute) against the device's dense matrix peak in the compute dtype.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from advisor.catalog.schema import Catalog, Device, Efficiency, Instance
from advisor.errors import UserError
from advisor.estimator.bands import band_for, workload_kind
from advisor.estimator.batch import FLAG, BatchPlan, GlobalBatch, plan_batch, resolve_global_batch, too_many_replicas
from advisor.estimator.comm import Fabric, check_fabric, collective_parts, collective_time, fabric_for
from advisor.estimator.config import Config, Workload
from advisor.estimator.memory import Memory, max_micro_batch, memory_for, repeated_blocks
from advisor.estimator.roofline import host_bound, profile_times
from advisor.estimator.runtime import (
    InputPipeline,
    RunCosts,
    RunOptions,
    feed_note,
    input_pipeline,
    run_costs,
    runtime_of,
)
from advisor.profiler.schema import Profile
from advisor.vocab import COMPUTE_DTYPE, DTYPE_BYTES, PARAM_BYTES

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
    total_s: float = Field(description="all collectives of one step, hidden or not")
    exposed_s: float = Field(description="the part not hidden behind compute")
    intra_s: float = Field(0.0, description="of total_s, inside the nodes")
    inter_s: float = Field(0.0, description="of total_s, between nodes")
    bytes_per_step: float
    intra: str
    inter: str
    bound: str = Field("none", description="the fabric that takes longer: its type, or 'none'")


class Estimate(BaseModel):
    config: Config
    device: str
    instance: str | None
    micro_batch: int
    accumulation: int
    global_batch: int
    global_batch_source: str = Field("", description="where the global batch came from (advisor/estimator/batch.py)")
    global_batch_reason: str | None = Field(None, description="why it differs from the one asked for (None: exact)")
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
    error_band: float | None = Field(
        None, description="expected |error| of step_time_s (a fraction) from validation runs, see error_basis"
    )
    error_basis: str | None = None
    fits: bool = Field(True, description="false: the run does not fit in memory, so it has no time or cost")
    to_fit: list[str] = Field([], description="when it does not fit: changes that would make it fit")
    input: InputPipeline | None = Field(None, description="the host's image pipeline, for image models")
    steps: float | None = None
    run: RunCosts | None = Field(None, description="the whole run: start-up, steps, evaluation, checkpoints")
    total_time_s: float | None = None
    node_usd_per_hour: float | None = None
    cost_usd: float | None = None
    assumptions: list[str]


def _bound(phase: Phase) -> str:
    parts = {"compute": phase.compute_s, "memory": phase.memory_s, "overhead": phase.overhead_s}
    return max(parts, key=parts.get)


def phase_times(profile: Profile, device: Device, eff: Efficiency, precision: str, micro: int) -> dict[str, Phase]:
    """Roofline time of each phase (forward, backward, optimizer) at micro-batch `micro` on one device."""
    sums: dict[str, list[float]] = {}
    # integer and bool ops (BatchNorm's step counter) have no catalog peak: roofline.peak_for gives them the
    # vector units' fp32 rate
    calls: dict[str, float] = {}
    for phase, t in profile_times(profile, device, eff, precision, micro):
        acc = sums.setdefault(phase, [0.0] * 6)
        for i, value in enumerate((t.seconds, t.compute_s, t.memory_s, t.overhead_s, t.flops, t.bytes)):
            acc[i] += value
        calls[phase] = calls.get(phase, 0.0) + t.host_calls
    sums = host_bound(sums, calls, profile, eff)
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


def _comm(profile: Profile, config: Config, fabric: Fabric, phases: dict[str, Phase], accum: int) -> Comm:
    per_node, nodes = config.devices_per_node, config.nodes
    if config.world <= 1 or config.strategy == "single":
        return Comm(total_s=0, exposed_s=0, bytes_per_step=0, intra=fabric.intra_type, inter=fabric.inter_type)
    grad_bytes = profile.trainable_parameters * PARAM_BYTES[config.precision]
    fwd, bwd = phases["forward"].seconds, phases["backward"].seconds
    if config.strategy == "ddp":
        # once per step (no_sync on the other micro-batches), bucket by bucket during the last backward
        intra, inter = collective_parts("all_reduce", grad_bytes, per_node, nodes, fabric)
        total = intra + inter
        last_bucket = collective_time("all_reduce", min(DDP_BUCKET_BYTES, grad_bytes), per_node, nodes, fabric)
        exposed = max(total - bwd, last_bucket)
        moved = grad_bytes
    else:  # fsdp: per micro-batch, all-gather (fwd), all-gather (bwd), reduce-scatter (bwd)
        weights = profile.parameters * DTYPE_BYTES[COMPUTE_DTYPE[config.precision]]
        g_intra, g_inter = collective_parts("all_gather", weights, per_node, nodes, fabric)
        s_intra, s_inter = collective_parts("reduce_scatter", grad_bytes, per_node, nodes, fabric)
        gather, scatter = g_intra + g_inter, s_intra + s_inter
        per_micro = max(0.0, gather - fwd) + max(0.0, gather + scatter - bwd)
        intra, inter = accum * (2 * g_intra + s_intra), accum * (2 * g_inter + s_inter)
        total = intra + inter
        exposed = accum * per_micro
        moved = accum * (2 * weights + grad_bytes)
    bound = fabric.inter_type if inter > intra else fabric.intra_type
    return Comm(
        total_s=total,
        exposed_s=exposed,
        intra_s=intra,
        inter_s=inter,
        bytes_per_step=moved,
        intra=fabric.intra_type,
        inter=fabric.inter_type,
        bound=bound,
    )


def billed_cost(seconds: float, hourly: float, nodes: int, instance: Instance) -> float:
    """Price × nodes × billed time, rounding up to the billing granularity and the minimum."""
    p = instance.pricing
    billed = max(seconds, p.minimum_billed_s)
    billed = math.ceil(billed / p.billing_granularity_s - 1e-9) * p.billing_granularity_s
    return hourly * nodes * billed / 3600.0


def steps_for(profile: Profile, workload: Workload | None, global_batch: int) -> float | None:
    if workload is None or workload.empty():
        return None
    if workload.steps is not None:
        return math.ceil(workload.steps)
    if workload.samples is not None:
        return math.ceil(workload.samples * (workload.epochs or 1) / global_batch)
    if not profile.tokens_per_sample:
        raise UserError(
            f"profile {profile.name} has no tokens per sample, so --tokens cannot be turned into steps",
            "give --samples or --steps",
        )
    return math.ceil(workload.tokens / (global_batch * profile.tokens_per_sample))


def host_share(device: Device, instance: Instance | None) -> float:
    """A CPU instance holds `device_count` sockets (0.33 of one for a small VM): it is one device whose
    peaks and bandwidth are that multiple of the socket's. 1 for everything else."""
    if device.kind == "cpu" and instance is not None:
        return instance.device_count
    return 1.0


def scaled_device(device: Device, factor: float) -> Device:
    if factor == 1.0:
        return device

    def scale(peaks):
        return peaks.model_copy(update={d: peaks.get(d) * factor for d in peaks.dtypes()})

    return device.model_copy(
        update={
            "matrix_flops": scale(device.matrix_flops),
            "vector_flops": scale(device.vector_flops),
            "memory_bandwidth": device.memory_bandwidth * factor,
        }
    )


def _batches(profile: Profile, config: Config, fit) -> tuple[BatchPlan, list[str], GlobalBatch]:
    """(how the global batch is split, notes, where the global batch came from): the global batch
    is resolved (advisor/estimator/batch.py), then split over the data-parallel replicas by `plan_batch`
    with the largest micro-batch that fits (`fit(limit)`) unless --micro-batch fixes it."""
    world = config.world
    gb = resolve_global_batch(profile, config.global_batch, config.micro_batch, world)
    if too_many_replicas(gb.samples, world):
        where = "" if gb.source == FLAG else f" ({gb.source})"
        raise UserError(
            f"global batch {gb.samples}{where} is smaller than the {world} data-parallel devices (each needs a sample)",
            f"use --global-batch {world} or more, or fewer devices",
        )
    per_device = -(-gb.samples // world)
    if config.micro_batch is not None and config.micro_batch > per_device:
        raise UserError(
            f"contradictory batch: micro-batch {config.micro_batch} × {world} devices is more than "
            f"the global batch {gb.samples}",
            "lower --micro-batch or raise --global-batch",
        )
    max_micro = config.micro_batch or fit(per_device)
    plan = plan_batch(gb.samples, world, max_micro, config.micro_batch)
    notes = [gb.describe()]
    if plan.reason:
        notes.append(f"global batch {gb.samples} runs as {plan.global_batch}: {plan.reason}")
    if plan.accumulation > 1:
        notes.append(
            f"micro-batch {plan.micro_batch} × {plan.accumulation} accumulation steps × {world} devices"
            + ("" if config.micro_batch else f" (the largest micro-batch that fits is {max_micro})")
        )
    return plan, notes, gb


def estimate(
    profile,
    catalog: Catalog,
    config: Config,
    workload: Workload | None = None,
    cache: dict | None = None,
    run: RunOptions | None = None,
) -> Estimate:
    """One configuration. `cache` (any dict, reused across calls for the same profile) memoizes the per-op
    roofline by (device, efficiency, precision, micro-batch), which is most of the work when many
    configurations share a device (the recommender). `run` sets the checkpoint interval and evaluation
    share (advisor/estimator/runtime.py); a workload's total time includes the run's fixed costs. A
    configuration that does not fit in memory gets no total time and no cost."""
    device = catalog.devices[config.device]
    eff = catalog.efficiency[device.efficiency]
    instance = catalog.instances.get(config.instance) if config.instance else None
    _memo(cache, ("precision", device.id, config.precision), lambda: check_precision(device, config.precision) or 1)
    assumptions: list[str] = []
    share = host_share(device, instance)
    if share != 1.0:
        device = scaled_device(device, share)
        assumptions.append(f"{instance.id} holds {share:g} {device.id} sockets: peaks and bandwidth × {share:g}")
    if config.world > 1 and config.strategy == "single":
        config = config.model_copy(update={"strategy": "ddp"})
        assumptions.append("more than one device: data parallel (DDP)")
    fabric = fabric_for(device, eff, instance, config.devices_per_node)
    check_fabric(fabric, config.devices_per_node, config.nodes, instance.id if instance else device.id)
    blocks = cache.get(("blocks",)) if cache is not None else None
    if blocks is None:
        blocks = repeated_blocks(profile)
        if cache is not None:
            cache[("blocks",)] = blocks
    # memory depends on the device, the host memory share of a CPU, precision, sharding and checkpointing only
    shard = config.world if config.strategy == "fsdp" else min(config.world, 2)
    mem_key = ("memory", device.id, config.instance if device.memory_bytes is None else None, config.precision)
    mem_key += (config.strategy, shard, config.checkpointing)
    plan, notes, gb = _batches(
        profile,
        config,
        lambda limit: _memo(
            cache,
            (*mem_key, "fit", limit),
            lambda: max_micro_batch(profile, config, device, eff, instance, limit, blocks),
        ),
    )
    micro, accum, global_batch = plan.micro_batch, plan.accumulation, plan.global_batch
    assumptions += notes
    key = (device.id, eff.id, config.precision, micro, share)
    phases = cache.get(key) if cache is not None else None
    if phases is None:
        phases = phase_times(profile, device, eff, config.precision, micro)
        if cache is not None:
            cache[key] = phases
    fwd, bwd, opt = phases["forward"], phases["backward"], phases["optimizer"]
    compute_pass = fwd.seconds + bwd.seconds + (fwd.seconds if config.checkpointing else 0.0)
    opt_s = opt.seconds / (config.world if config.strategy == "fsdp" else 1)
    comm = _comm(profile, config, fabric, phases, accum)
    step = accum * compute_pass + opt_s + comm.exposed_s
    feed = input_pipeline(profile, runtime_of(catalog), device, instance, config, global_batch, step)
    if feed is not None and feed.wait_s > 0:
        step += feed.wait_s
        assumptions.append(feed_note(feed, global_batch))
    parts = [fwd, bwd] + ([fwd] if config.checkpointing else [])
    opt_share = opt_s / opt.seconds if opt.seconds else 1.0
    compute_s = accum * sum(p.compute_s for p in parts) + opt.compute_s * opt_share
    memory_s = accum * sum(p.memory_s for p in parts) + opt.memory_s * opt_share
    overhead_s = accum * sum(p.overhead_s for p in parts) + opt.overhead_s * opt_share
    world = config.world
    model_flops = world * accum * (fwd.flops + bwd.flops)  # recompute is not useful work
    peak = device.peak(COMPUTE_DTYPE[config.precision], "matrix") or device.peak("fp32", "matrix")
    peak = peak or device.peak("fp32", "vector")
    mfu = model_flops / (step * world * peak) if step > 0 else 0.0
    single = accum * compute_pass + opt_s  # the same per-device work without communication
    memory = _memo(cache, (*mem_key, micro), lambda: memory_for(profile, config, device, eff, instance, micro, blocks))
    if not memory.fits:
        assumptions.append(
            "does NOT fit in memory: no total time or cost (advisor/estimator/fit.py says what would fit)"
        )
    shown = dict(phases)
    if config.checkpointing:
        shown = {"forward": fwd, "backward": bwd, "recompute": fwd, "optimizer": opt}
    if opt_s != opt.seconds:
        shown["optimizer"] = opt.model_copy(
            update={k: getattr(opt, k) * opt_share for k in ("seconds", "compute_s", "memory_s", "overhead_s")}
        )
    est = Estimate(
        config=config,
        device=device.id,
        instance=instance.id if instance else None,
        micro_batch=micro,
        accumulation=accum,
        global_batch=global_batch,
        global_batch_source=gb.source,
        global_batch_reason=plan.reason,
        step_time_s=step,
        phases=shown,
        compute_s=compute_s,
        memory_bound_s=memory_s,
        overhead_s=overhead_s,
        comm=comm,
        samples_per_s=global_batch / step if step > 0 else 0.0,
        mfu=mfu,
        scaling_efficiency=single / step if step > 0 else 1.0,
        memory=memory,
        fits=memory.fits,
        input=feed,
        assumptions=assumptions
        + _memo(
            cache,
            ("assumptions", device.id, config.instance, config.precision, config.strategy, config.checkpointing)
            + (config.devices_per_node > 1, config.nodes > 1),
            lambda: _assumptions(device, eff, config, profile, fabric, peak, blocks),
        ),
    )
    kind = cache.get(("kind",)) if cache is not None else None
    est.error_band, est.error_basis = band_for(catalog, device, eff, profile, kind)
    if cache is not None:
        cache[("kind",)] = kind or workload_kind(profile)
    steps = steps_for(profile, workload, global_batch)
    if steps is not None:
        est.steps = steps
    if steps is not None and memory.fits:
        est.run = run_costs(profile, catalog, device, instance, config, steps * step, run)
        est.total_time_s = est.run.total_s
        if instance is not None:
            hourly = instance.hourly_usd(spot=config.spot)
            if hourly is None:
                est.assumptions.append(f"{instance.id} has no {'spot' if config.spot else 'on-demand'} price: no cost")
            else:
                est.node_usd_per_hour = hourly
                est.cost_usd = billed_cost(est.total_time_s, hourly, config.nodes, instance)
    return est


def _memo(cache: dict | None, key: tuple, make):
    """make() once per key when a cache is given (the recommender's), else every time."""
    if cache is None:
        return make()
    value = cache.get(key)
    if value is None:
        value = cache[key] = make()
    return value


def _assumptions(
    device: Device, eff: Efficiency, config: Config, profile: Profile, fabric: Fabric, peak, blocks
) -> list[str]:
    dtype = COMPUTE_DTYPE[config.precision]
    out = [
        f"profile {profile.name} made from {profile.made_from()}",
        f"datasheet: {device.name}: {dtype} matrix peak {peak / 1e12:.4g} TFLOP/s, memory bandwidth "
        f"{device.memory_bandwidth / 1e9:.4g} GB/s ({device.source}, as of {device.as_of})",
        f"efficiency profile {eff.id}: top matmul {eff.matrix[-1].efficiency:g}, top bandwidth "
        f"{eff.memory[-1].efficiency:g}, per-op overhead {eff.op_overhead_s * 1e6:.3g} µs; {eff.note}",
        f"memory reserve {eff.memory_reserve_bytes / 1e9:.3g} GB + {100 * eff.memory_reserve_fraction:.3g} % of "
        "capacity (context, workspaces, fragmentation)",
    ]
    if config.world > 1:
        link = []
        if fabric.intra_bw is not None and config.devices_per_node > 1:
            link.append(f"{fabric.intra_type} {fabric.intra_bw / 1e9:.4g} GB/s achievable per direction")
        if fabric.inter_bw is not None and config.nodes > 1:
            link.append(f"{fabric.inter_type} {fabric.inter_bw / 1e9:.4g} GB/s achievable per node")
        out.append(
            f"collectives: ring, α {fabric.latency_s * 1e6:.3g} µs, {'; '.join(link)}; hierarchical across nodes"
        )
    if config.strategy == "fsdp" and config.world > 1:
        out.append(f"FSDP units: {blocks} repeated blocks from the profile's module names; weights gathered in {dtype}")
    if config.checkpointing:
        out.append("activation checkpointing: one more forward pass; the profile's checkpoint_bytes are kept")
    if eff.calibration_threads:
        n = eff.calibration_threads
        out.append(
            f"{device.id} was calibrated with {n} torch thread{'s' * (n > 1)}: the estimate is for {n}; training "
            f"with another count (torch.set_num_threads, OMP_NUM_THREADS) needs 'advisor calibrate --threads N'"
        )
    if dtype == "tf32" and "tf32" not in device.dtypes():
        out.append(f"{device.id} has no tf32: matrix ops run in fp32")
    if profile.precision != config.precision:
        out.append(f"profile made under {profile.precision}, estimated under {config.precision}: dtypes remapped")
    if not profile.linear_in_batch:
        out.append("the profile's cost is not linear in the batch: other batch sizes are approximate")
    return out
