"""One profile on one configuration: step time with its parts, memory fit, total time and cost.

For a layout (tp, pp, vpp, cp, dp, sharding, sequence parallel, recompute) with m = accumulation micro-batches
of size b per data-parallel replica:

    step = m · T_max + bubble + exposed PP + exposed DP + optimizer
    T_s  = blocks_s · (fwd + bwd + recompute + TP + exposed CP) [+ embedding] [+ head and loss]

per micro-batch on pipeline stage s (T_max the slowest stage). The per-block forward and backward come from the
profile's ops on the device under the layout (advisor/estimator/passes.py); each parallel dimension adds its
own traffic (advisor/estimator/parallel/): tensor parallelism its all-reduces (on the critical path), context
parallelism the part of its ring exchange the attention does not hide, the pipeline its bubble and the
fill/drain sends, data parallelism what its gradient and weight collectives do not hide behind the passes.
Recomputation runs, per block, the whole forward again (full) or the attention core (selective) as the
kernels do it. With tp = pp = cp = 1 this is the data-parallel model: a · (fwd + bwd [+ fwd]) + opt + exposed.

Scaling efficiency = the step without exposed communication and bubble ÷ the step. MFU counts the model's
forward and backward FLOPs (not the recompute) against the device's dense matrix peak in the compute dtype
(bf16 for fp8-mixed: MFU is quoted against the bf16 peak).
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, Field

from advisor.catalog.schema import Catalog, Device, Instance
from advisor.errors import UserError
from advisor.estimator import parallel
from advisor.estimator.bands import band_for, workload_kind
from advisor.estimator.batch import FLAG, BatchPlan, GlobalBatch, plan_batch, resolve_global_batch, too_many_replicas
from advisor.estimator.config import Config, Workload
from advisor.estimator.layout import Layout
from advisor.estimator.memory import Memory, largest_micro_batch, memory_arrays, to_memory
from advisor.estimator.parallel import pipeline
from advisor.estimator.passes import _records, pass_times, unaligned_time
from advisor.estimator.report import Comm, DimComm, Phase, assumptions, comm_report
from advisor.estimator.runtime import (
    InputPipeline,
    RunCosts,
    RunOptions,
    feed_note,
    input_pipeline,
    run_costs,
    runtime_of,
)
from advisor.estimator.setup import check_precision, model_flops, setup_from_catalog  # noqa: F401
from advisor.estimator.step import adjust_passes, layout_arrays, step_arrays  # noqa: F401
from advisor.profiler.schema import Profile

STEP_PARTS = ("forward", "backward", "recompute", "tp", "cp", "bubble", "pp", "dp", "optimizer", "input")


class Estimate(BaseModel):
    config: Config
    device: str
    instance: str | None
    layout: Layout
    micro_batch: int
    accumulation: int
    global_batch: int
    global_batch_source: str = Field("", description="where the global batch came from (advisor/estimator/batch.py)")
    global_batch_reason: str | None = Field(None, description="why it differs from the one asked for (None: exact)")
    step_time_s: float
    parts: dict[str, float] = Field(
        description="the step split: forward, backward, recompute, exposed tp / cp / pp / dp communication, "
        "pipeline bubble, optimizer, waiting for input (seconds, summing to step_time_s; on the slowest "
        "pipeline stage)"
    )
    phases: dict[str, Phase]
    compute_s: float
    memory_bound_s: float
    overhead_s: float
    comm: Comm
    comm_by_dim: dict[str, DimComm] = Field(description="tp, cp, pp, dp")
    stage_blocks: list[int] = Field(description="repeated blocks on each pipeline stage")
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
    """(how the global batch is split, notes, where the global batch came from): the global batch is resolved
    (advisor/estimator/batch.py), then split over the layout's dp data-parallel replicas by `plan_batch` with
    the largest micro-batch that fits (`fit(limit)`) unless --micro-batch fixes it. Given both --global-batch
    and --micro-batch, the global batch must be a multiple of dp × micro-batch."""
    dp = config.layout.dp
    gb = resolve_global_batch(profile, config.global_batch, config.micro_batch, dp)
    if too_many_replicas(gb.samples, dp):
        where = "" if gb.source == FLAG else f" ({gb.source})"
        raise UserError(
            f"global batch {gb.samples}{where} is smaller than the {dp} data-parallel replicas (each needs a sample)",
            f"use --global-batch {dp} or more, or fewer replicas",
        )
    per_replica = -(-gb.samples // dp)
    if config.micro_batch is not None and config.micro_batch > per_replica:
        raise UserError(
            f"contradictory batch: micro-batch {config.micro_batch} × {dp} replicas is more than "
            f"the global batch {gb.samples}",
            "lower --micro-batch or raise --global-batch",
        )
    if config.micro_batch is not None and gb.source == FLAG and gb.samples % (dp * config.micro_batch):
        unit = dp * config.micro_batch
        lower, upper = gb.samples // unit * unit, -(-gb.samples // unit) * unit
        raise UserError(
            f"--global-batch {gb.samples} is not a multiple of dp × micro-batch = {dp} × {config.micro_batch} = "
            f"{unit} (global batch = micro-batch × accumulation × dp)",
            f"use --global-batch {' or '.join(str(v) for v in (lower, upper) if v > 0)}",
        )
    max_micro = config.micro_batch or fit(per_replica)
    plan = plan_batch(gb.samples, dp, max_micro, config.micro_batch)
    notes = [gb.describe()]
    if plan.reason:
        notes.append(f"global batch {gb.samples} runs as {plan.global_batch}: {plan.reason}")
    if plan.accumulation > 1:
        notes.append(
            f"micro-batch {plan.micro_batch} × {plan.accumulation} accumulation steps × {dp} replicas"
            + ("" if config.micro_batch else f" (the largest micro-batch that fits is {max_micro})")
        )
    return plan, notes, gb


def _phase(passes: dict, keys: list[tuple], scale: float, i: int = 0) -> Phase:
    vals = {w: sum(float(passes[w][k][i]) for k in keys) * scale for w in passes}
    phase = Phase(
        seconds=vals["seconds"],
        compute_s=vals["compute_s"],
        memory_s=vals["memory_s"],
        overhead_s=vals["overhead_s"],
        flops=vals["flops"],
        bytes=0.0,
        bound="compute",
    )
    bounds = {"compute": phase.compute_s, "memory": phase.memory_s, "overhead": phase.overhead_s}
    phase.bound = max(bounds, key=bounds.get)
    return phase


def unaligned_note(setup, micro: int, accum: int, layout: Layout, step: float) -> str | None:
    """What the 16-bit GEMMs with a dimension off the 16-byte grid cost (kernels.gemm_unaligned), when that is 5 %
    of the step or more, with the largest one's shapes and what to change."""
    seconds, j = unaligned_time(setup.table, micro, layout.tp, layout.cp, layout.sequence_parallel)
    if j < 0 or step <= 0 or seconds * accum < 0.05 * step:
        return None
    record = setup.profile.ops[_records(setup.profile, setup.roles, setup.precision).rows[j][0]]
    return (
        f"{seconds * accum / step:.0%} of the step goes to 16-bit GEMMs with a dimension that is not a multiple "
        f"of 8 (the largest: {record.op} of {record.shapes}), which cuBLAS runs on its slow unaligned kernels "
        f"(at most {setup.table.flops_cap[j] / 1e12:.0f} TFLOP/s here): pad that dimension (a vocabulary, a "
        "width) to a multiple of 8"
    )


def estimate(
    profile,
    catalog: Catalog,
    config: Config,
    workload: Workload | None = None,
    cache: dict | None = None,
    run: RunOptions | None = None,
) -> Estimate:
    """One configuration. `cache` (any dict, reused across calls for the same profile) memoizes what layouts of
    the same device and precision share (advisor/estimator/setup.py) and the per-op passes. `run` sets the
    checkpoint interval and evaluation share (advisor/estimator/runtime.py); a workload's total time includes
    the run's fixed costs. A configuration that does not fit in memory gets no total time and no cost."""
    setup = setup_from_catalog(profile, catalog, config, cache)
    layout = config.layout
    notes_ = parallel.check(layout, setup.structure, config.world, setup.fabric.domain)
    if setup.device.kind == "cpu" and setup.instance is not None and setup.instance.device_count != 1:
        share = setup.instance.device_count
        notes_.append(f"{setup.instance.id} holds {share:g} {setup.device.id} sockets: peaks and bandwidth × {share:g}")

    def fit(limit: int) -> int:
        return largest_micro_batch(setup, layout_arrays(setup, layout, 1), limit, limit)

    plan, notes, gb = _batches(profile, config, fit)
    micro, accum, global_batch = plan.micro_batch, plan.accumulation, plan.global_batch
    notes_ += notes
    lay = layout_arrays(setup, layout, accum)
    key = ("passes", id(setup), micro, layout.tp, layout.cp, layout.sequence_parallel)
    passes = cache.get(key) if cache is not None else None
    if passes is None:
        passes = pass_times(setup.table, [micro], [layout.tp], [layout.cp], [layout.sequence_parallel])
        if cache is not None:
            cache[key] = passes
    passes = adjust_passes(passes, lay["level"], setup.fused)
    out = step_arrays(setup, lay, micro, passes)
    mem_parts = memory_arrays(setup, lay, np.asarray([micro]))
    memory = to_memory(setup, mem_parts)
    step = float(out["step"][0])
    parts = {k: float(out["parts"][k][0]) for k in STEP_PARTS if k != "input"}
    workers = run.loader_workers if run is not None else None
    feed = input_pipeline(
        profile, runtime_of(catalog), setup.device, setup.instance, config, global_batch, step, workers
    )
    parts["input"] = 0.0
    if feed is not None and feed.wait_s > 0:
        step += feed.wait_s
        parts["input"] = feed.wait_s
        notes_.append(feed_note(feed, global_batch))
    n_slow, blocks = float(out["n_slow"][0]), setup.blocks
    slow = int(out["slow"][0])
    first, last = slow == 0 or layout.pp == 1, slow == 2 or layout.pp == 1
    scale_blk = n_slow / blocks
    fwd, bwd = (
        _combine([_phase(passes, [("block", p)], scale_blk), _phase(passes, [("before", p)], first),
                  _phase(passes, [("after", p)], last)])
        for p in ("forward", "backward")
    )  # fmt: skip
    opt = _phase(passes, [("optimizer", "optimizer")], float(out["opt_share"][0]))
    phases = {"forward": fwd, "backward": bwd}
    if layout.recompute != "none" and parts["recompute"] > 0:
        key_rec = ("block", "forward") if layout.recompute == "full" else ("core", "forward")
        phases["recompute"] = _phase(passes, [key_rec], scale_blk)
    phases["optimizer"] = opt
    compute_s = accum * sum(p.compute_s for n, p in phases.items() if n != "optimizer") + opt.compute_s
    memory_s = accum * sum(p.memory_s for n, p in phases.items() if n != "optimizer") + opt.memory_s
    overhead_s = accum * sum(p.overhead_s for n, p in phases.items() if n != "optimizer") + opt.overhead_s
    device = setup.device
    peak = setup.peak
    flops = model_flops(setup, micro) * accum * layout.dp
    mfu = flops / (step * config.world * peak) if step > 0 else 0.0
    comm_by_dim, comm = comm_report(setup, out, layout)
    hidden = step - comm.exposed_s - parts["bubble"]
    unaligned = unaligned_note(setup, micro, accum, layout, step)
    if unaligned:
        notes_.append(unaligned)
    if not memory.fits:
        notes_.append("does NOT fit in memory: no total time or cost (advisor/estimator/fit.py says what would fit)")
    if device.kind == "cpu" and profile.device != "cpu":
        notes_.append(
            f"profiled on {profile.device}, estimated on a CPU: the step's page faults are not counted (a CPU profile "
            "counts them in fresh processes; they can be most of a step with large embedding tables) and the "
            "optimizer is priced as the multi-tensor updates of a GPU run, where PyTorch on a CPU updates each "
            "tensor in turn; where the model fits in this machine's memory, a profile made on the CPU "
            "(`advisor profile MODEL --device cpu`) counts both"
        )
    stages = pipeline.stage_blocks(blocks, layout.pp) if setup.structure is not None else [1]
    est = Estimate(
        config=config,
        device=device.id,
        instance=setup.instance.id if setup.instance else None,
        layout=layout,
        micro_batch=micro,
        accumulation=accum,
        global_batch=global_batch,
        global_batch_source=gb.source,
        global_batch_reason=plan.reason,
        step_time_s=step,
        parts=parts,
        phases=phases,
        compute_s=compute_s,
        memory_bound_s=memory_s,
        overhead_s=overhead_s,
        comm=comm,
        comm_by_dim=comm_by_dim,
        stage_blocks=stages,
        samples_per_s=global_batch / step if step > 0 else 0.0,
        mfu=mfu,
        scaling_efficiency=hidden / step if step > 0 else 1.0,
        memory=memory,
        fits=memory.fits,
        input=feed,
        assumptions=notes_ + assumptions(setup, config, peak),
    )
    kind = cache.get(("kind",)) if cache is not None else None
    est.error_band, est.error_basis = band_for(catalog, device, setup.eff, profile, kind)
    if cache is not None:
        cache[("kind",)] = kind or workload_kind(profile)
    steps = steps_for(profile, workload, global_batch)
    if steps is not None:
        est.steps = steps
    if steps is not None and memory.fits:
        est.run = run_costs(profile, catalog, setup.device, setup.instance, config, steps * step, run)
        est.total_time_s = est.run.total_s
        instance = setup.instance
        if instance is not None:
            hourly = instance.hourly_usd(spot=config.spot)
            if hourly is None:
                est.assumptions.append(f"{instance.id} has no {'spot' if config.spot else 'on-demand'} price: no cost")
            else:
                est.node_usd_per_hour = hourly
                est.cost_usd = billed_cost(est.total_time_s, hourly, config.nodes, instance)
    return est


def _combine(phases: list[Phase]) -> Phase:
    out = Phase(
        seconds=sum(p.seconds for p in phases),
        compute_s=sum(p.compute_s for p in phases),
        memory_s=sum(p.memory_s for p in phases),
        overhead_s=sum(p.overhead_s for p in phases),
        flops=sum(p.flops for p in phases),
        bytes=0.0,
        bound="compute",
    )
    bounds = {"compute": out.compute_s, "memory": out.memory_s, "overhead": out.overhead_s}
    out.bound = max(bounds, key=bounds.get)
    return out
