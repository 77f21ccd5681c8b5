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
from advisor.estimator.comm import p2p_time
from advisor.estimator.config import Config, Workload
from advisor.estimator.layout import Layout
from advisor.estimator.memory import Memory, largest_micro_batch, memory_arrays, to_memory
from advisor.estimator.parallel import context, data, pipeline, tensor
from advisor.estimator.passes import pass_times
from advisor.estimator.roofline import peak_for
from advisor.estimator.setup import Setup, check_precision, model_flops, setup_from_catalog  # noqa: F401
from advisor.profiler.schema import Profile
from advisor.vocab import COMPUTE_DTYPE

STEP_PARTS = ("forward", "backward", "recompute", "tp", "cp", "bubble", "pp", "dp", "optimizer")


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
    intra_s: float = Field(0.0, description="of total_s, inside the fast domain (node)")
    inter_s: float = Field(0.0, description="of total_s, between nodes")
    bytes_per_step: float
    intra: str
    inter: str
    bound: str = Field("none", description="the fabric that takes longer: its type, or 'none'")


class DimComm(BaseModel):
    """One parallel dimension's traffic in one step on one device."""

    total_s: float
    exposed_s: float
    bytes_per_step: float
    fabric: str = Field(description="where it runs: the fabric's type, the network's, or 'none'")


class Estimate(BaseModel):
    config: Config
    device: str
    instance: str | None
    layout: Layout
    micro_batch: int
    accumulation: int
    global_batch: int
    step_time_s: float
    parts: dict[str, float] = Field(
        description="the step split: forward, backward, recompute, exposed tp / cp / pp / dp communication, "
        "pipeline bubble, optimizer (seconds, summing to step_time_s; on the slowest pipeline stage)"
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
    steps: float | None = None
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


def layout_arrays(setup: Setup, layout: Layout, m: int) -> dict:
    """One layout as the arrays `step_arrays` and `memory_arrays` take (the search passes many at once)."""
    one = lambda v: np.asarray([v])  # noqa: E731
    return {
        "tp": one(layout.tp),
        "pp": one(layout.pp),
        "vpp": one(layout.vpp),
        "cp": one(layout.cp),
        "dp": one(layout.dp),
        "level": one(data.LEVEL[layout.sharding]),
        "sp": one(layout.sequence_parallel),
        "rec": one(("none", "selective", "full").index(layout.recompute)),
        "m": one(m),
        "stages": tuple(one(x) for x in pipeline.stage_shape(setup.blocks, layout.pp)),
    }


def _p2p(nbytes, n, stride, fabric):
    """p2p_time over arrays (seconds of one send)."""
    return data.grouped(lambda f, n_, s_: (p2p_time(1.0, n_, s_, f)[0], 0.0), nbytes, n, stride, fabric)[0]


def step_arrays(setup: Setup, lay: dict, micro, passes: dict) -> dict:
    """Step time and its parts per layout. `passes` holds pass_times sums at each layout's (micro, tp, cp, sp)."""
    s, blocks = passes["seconds"], setup.blocks
    tp, pp, vpp, cp, dp, m, rec = (lay[k] for k in ("tp", "pp", "vpp", "cp", "dp", "m", "rec"))
    n_first, n_mid, n_last = lay["stages"]
    bf, bb = s[("block", "forward")] / blocks, s[("block", "backward")] / blocks
    cf, cb = s[("core", "forward")] / blocks, s[("core", "backward")] / blocks
    ef, eb, hf, hb = (
        s[("before", "forward")],
        s[("before", "backward")],
        s[("after", "forward")],
        s[("after", "backward")],
    )
    recompute = np.where(rec == 2, bf, np.where(rec == 1, cf if setup.has_scores else 0.0, 0.0))
    st, width, fabric = setup.structure, setup.compute_width, setup.fabric
    tp_blk = cp_blk = cp_tot = tp_msg = np.zeros(np.shape(tp))
    if st is not None and st.hidden and st.seq_len:
        tp_msg = micro * st.seq_len / cp * st.hidden * width  # b·s·h of one all-reduce
        ar = sum(data._group("all_reduce", tp_msg, tp, 1, fabric))
        tp_blk = np.where(tp > 1, np.where(rec == 2, 6, 4) * ar, 0.0)
        if st.heads:
            step = _p2p(context.kv_chunk_bytes(st, micro, cp, tp, width), cp, tp, fabric)
            cp_tot, cp_blk = context.ring(step, cp, cf, cb, rec == 2)
    per_block = bf + bb + recompute + tp_blk + cp_blk

    def stage(n, first, last):
        return n * per_block + first * (ef + eb) + last * (hf + hb)

    single = pp == 1
    t_first, t_mid, t_last = stage(n_first, 1, single), stage(n_mid, 0, 0), stage(n_last, single, 1)
    t_all = stage(blocks, 1, 1)
    busy, bubble = pipeline.step_parts(t_first, t_mid, t_last, t_all, pp, vpp, m)
    slow = np.where(single, 0, np.argmax(np.stack([t_first, t_mid, t_last]), axis=0))  # the stage that sets the pace
    n_slow = np.choose(slow, [n_first, n_mid, n_last])
    is_first, is_last = (slow == 0), (slow == 2) | single
    fwd = n_slow * bf + is_first * ef + is_last * hf
    bwd = n_slow * bb + is_first * eb + is_last * hb
    # pipeline sends
    msg = (micro * (st.seq_len or 0) / cp * (st.hidden or 0) * width / np.where(lay["sp"], tp, 1)) if st else 0.0
    t_p2p = _p2p(msg, pp, tp * cp * dp, fabric) if st else np.zeros(np.shape(tp))
    pp_exposed = np.where(single, 0.0, 2 * (pp - 1) * vpp * t_p2p)
    pp_total = np.where(single, 0.0, 2 * m * vpp * t_p2p + pp_exposed)
    # data parallelism on the slowest stage's parameters
    psi = tensor.device_parameters(setup.params, tp, blocks, n_slow, is_first, is_last)
    psi_train = psi * setup.train_share
    replicas = dp * cp
    dpc = data.traffic(
        psi, psi_train, lay["level"], replicas, tp, m, fwd, bwd + n_slow * recompute, setup.widths, fabric
    )
    opt_full = s[("optimizer", "optimizer")]
    opt_share = data.optimizer_share(psi_train, setup.profile.trainable_parameters, lay["level"], replicas)
    optimizer = opt_full * opt_share
    parts = {
        "forward": m * fwd,
        "backward": m * bwd,
        "recompute": m * n_slow * recompute,
        "tp": m * n_slow * tp_blk,
        "cp": m * n_slow * cp_blk,
        "bubble": bubble,
        "pp": pp_exposed,
        "dp": dpc["exposed_s"],
        "optimizer": optimizer,
    }
    step = busy + bubble + pp_exposed + dpc["exposed_s"] + optimizer
    return {
        "step": step,
        "parts": parts,
        "slow": slow,
        "n_slow": n_slow,
        "opt_share": opt_share,
        "comm": {
            "tp": (m * n_slow * tp_blk, m * n_slow * tp_blk),
            "cp": (m * n_slow * cp_tot, m * n_slow * cp_blk),
            "pp": (pp_total, pp_exposed),
            "dp": (dpc["total_s"], dpc["exposed_s"]),
        },
        "dp": dpc,
        "bytes": {
            "tp": np.where(tp > 1, m * n_slow * np.where(rec == 2, 6, 4) * tp_msg, 0.0),
            "cp": m
            * n_slow
            * np.where(cp > 1, 3 * np.maximum(cp - 1, 0), 0)
            * (context.kv_chunk_bytes(st, micro, cp, tp, width) if st and st.heads else 0.0),
            "pp": np.where(single, 0.0, 2 * m * vpp * msg),
            "dp": dpc["bytes"],
        },
    }


def _batches(profile: Profile, config: Config, fit) -> tuple[int, int, int, list[str]]:
    """(micro-batch, accumulation, global batch, notes) for the layout's dp replicas. Without --global-batch each
    replica takes --micro-batch, else the profile's batch size. The micro-batch is the largest that fits, then
    evened out so that the accumulation steps pad the global batch as little as possible."""
    dp, notes = config.layout.dp, []
    if config.global_batch is not None and config.global_batch < dp:
        raise UserError(
            f"--global-batch {config.global_batch} is smaller than the {dp} data-parallel replicas (each needs a "
            "sample)",
            f"use --global-batch {dp} or more, or fewer replicas",
        )
    if config.global_batch:
        per_replica = math.ceil(config.global_batch / dp)
    else:  # the micro-batch asked for, else the batch the model was profiled at, on every replica
        per_replica = config.micro_batch or profile.batch_size
    if config.micro_batch is not None:
        if config.micro_batch > per_replica:
            raise UserError(
                f"contradictory batch: micro-batch {config.micro_batch} × {dp} replicas is more than "
                f"the global batch {config.global_batch or per_replica * dp}",
                "lower --micro-batch or raise --global-batch",
            )
        if config.global_batch and config.global_batch % (dp * config.micro_batch):
            unit = dp * config.micro_batch
            lower, upper = config.global_batch // unit * unit, -(-config.global_batch // unit) * unit
            raise UserError(
                f"--global-batch {config.global_batch} is not a multiple of dp × micro-batch = {dp} × "
                f"{config.micro_batch} = {unit} (global batch = micro-batch × accumulation × dp)",
                f"use --global-batch {' or '.join(str(v) for v in (lower, upper) if v > 0)}",
            )
        micro = config.micro_batch
    else:
        micro = fit(per_replica)
    accum = math.ceil(per_replica / micro)
    if config.micro_batch is None:
        micro = math.ceil(per_replica / accum)  # same accumulation, least padding
    global_batch = micro * accum * dp
    asked = config.global_batch or per_replica * dp
    if global_batch != asked:
        notes.append(f"global batch {asked} runs as {global_batch} (micro-batch {micro} × {accum} × {dp})")
    if accum > 1:
        notes.append(f"batch {per_replica} per replica does not fit: micro-batch {micro}, {accum} accumulation steps")
    return micro, accum, global_batch, notes


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


def estimate(
    profile, catalog: Catalog, config: Config, workload: Workload | None = None, cache: dict | None = None
) -> Estimate:
    """One configuration. `cache` (any dict, reused across calls for the same profile) memoizes what layouts of
    the same device and precision share (advisor/estimator/setup.py) and the per-op passes."""
    setup = setup_from_catalog(profile, catalog, config, cache)
    layout = config.layout
    assumptions = parallel.check(layout, setup.structure, config.world, setup.fabric.domain)
    if setup.device.kind == "cpu" and setup.instance is not None and setup.instance.device_count != 1:
        share = setup.instance.device_count
        assumptions.append(
            f"{setup.instance.id} holds {share:g} {setup.device.id} sockets: peaks and bandwidth × {share:g}"
        )

    def fit(limit: int) -> int:
        return largest_micro_batch(setup, layout_arrays(setup, layout, 1), limit, limit)

    micro, accum, global_batch, notes = _batches(profile, config, fit)
    assumptions += notes
    lay = layout_arrays(setup, layout, accum)
    key = ("passes", id(setup), micro, layout.tp, layout.cp, layout.sequence_parallel)
    passes = cache.get(key) if cache is not None else None
    if passes is None:
        passes = pass_times(setup.table, [micro], [layout.tp], [layout.cp], [layout.sequence_parallel])
        if cache is not None:
            cache[key] = passes
    out = step_arrays(setup, lay, micro, passes)
    mem_parts = memory_arrays(setup, lay, np.asarray([micro]))
    memory = to_memory(setup, mem_parts)
    step = float(out["step"][0])
    parts = {k: float(out["parts"][k][0]) for k in STEP_PARTS}
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
    peak = peak_for(device, COMPUTE_DTYPE[config.precision], "matrix")[0] or device.peak("fp32", "vector")
    flops = model_flops(setup, micro) * accum * layout.dp
    mfu = flops / (step * config.world * peak) if step > 0 else 0.0
    comm_by_dim, comm = _comm_report(setup, out, layout)
    hidden = step - comm.exposed_s - parts["bubble"]
    if not memory.fits:
        assumptions.append(
            "does NOT fit in memory: try --recompute, a sharding (--strategy), more parallelism or devices"
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
        assumptions=assumptions + _assumptions(setup, config, peak),
    )
    steps = steps_for(profile, workload, global_batch)
    if steps is not None:
        est.steps = steps
        est.total_time_s = steps * step
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


def _comm_report(setup: Setup, out: dict, layout: Layout) -> tuple[dict[str, DimComm], Comm]:
    """Per-dimension traffic (which fabric each runs on) and its sum, for the one layout in `out`."""
    fabric = setup.fabric
    dpc = out["dp"]
    tier = {
        "tp": layout.tp <= fabric.domain,
        "cp": layout.tp * layout.cp <= fabric.domain,
        "pp": layout.tp * layout.cp * layout.dp < fabric.domain,
        "dp": float(dpc["inter_s"][0]) <= float(dpc["intra_s"][0]),
    }
    active = {"tp": layout.tp > 1, "cp": layout.cp > 1, "pp": layout.pp > 1, "dp": layout.replicas > 1}
    by_dim: dict[str, DimComm] = {}
    for dim, (total, exposed) in out["comm"].items():
        where = "none" if not active[dim] else (fabric.intra_type if tier[dim] else fabric.inter_type)
        by_dim[dim] = DimComm(
            total_s=float(total[0]),
            exposed_s=float(exposed[0]),
            bytes_per_step=float(out["bytes"][dim][0]),
            fabric=where,
        )
    total = sum(d.total_s for d in by_dim.values())
    intra = float(dpc["intra_s"][0]) + sum(
        d.total_s for k, d in by_dim.items() if k != "dp" and d.fabric == fabric.intra_type
    )
    inter = max(total - intra, 0.0)
    comm = Comm(
        total_s=total,
        exposed_s=sum(d.exposed_s for d in by_dim.values()),
        intra_s=intra,
        inter_s=inter,
        bytes_per_step=sum(d.bytes_per_step for d in by_dim.values()),
        intra=fabric.intra_type,
        inter=fabric.inter_type,
        bound="none" if total == 0 else (fabric.inter_type if inter > intra else fabric.intra_type),
    )
    return by_dim, comm


def _assumptions(setup: Setup, config: Config, peak: float) -> list[str]:
    device, eff, fabric, profile = setup.device, setup.eff, setup.fabric, setup.profile
    dtype = COMPUTE_DTYPE[config.precision]
    layout = config.layout
    out = [
        f"datasheet: {device.name}: {dtype} matrix peak {peak / 1e12:.4g} TFLOP/s, memory bandwidth "
        f"{device.memory_bandwidth / 1e9:.4g} GB/s ({device.source}, as of {device.as_of})",
        f"efficiency profile {eff.id}: top matmul {eff.matrix[-1].efficiency:g}, top bandwidth "
        f"{eff.memory[-1].efficiency:g}, per-op overhead {eff.op_overhead_s * 1e6:.3g} µs; {eff.note}",
        f"memory reserve {eff.memory_reserve_bytes / 1e9:.3g} GB + {100 * eff.memory_reserve_fraction:.3g} % of "
        "capacity (context, workspaces, fragmentation)",
    ]
    if config.world > 1:
        link = []
        if fabric.intra_bw is not None and fabric.domain > 1:
            link.append(f"{fabric.intra_type} {fabric.intra_bw / 1e9:.4g} GB/s achievable per direction")
        if fabric.inter_bw is not None and config.nodes > 1:
            link.append(f"{fabric.inter_type} {fabric.inter_bw / 1e9:.4g} GB/s achievable per node")
        out.append(
            f"collectives: ring, α {fabric.latency_s * 1e6:.3g} µs, {'; '.join(link)}; hierarchical across nodes"
        )
    if layout.sharding == "fsdp" and layout.replicas > 1:
        out.append(
            f"FSDP units: {setup.fsdp_units} repeated blocks from the profile's module names; weights gathered "
            f"in {dtype}"
        )
    if layout.tp > 1:
        out.append(
            "tensor parallelism: the blocks' matmuls and the ops between them split by tp (from the profile's "
            f"shapes); norms and residuals {'split too (SP)' if layout.sequence_parallel else 'whole'}; its "
            "all-reduces are not overlapped"
        )
    if layout.pp > 1:
        out.append(
            f"pipeline: 1F1B{' interleaved' if layout.vpp > 1 else ''} over {layout.pp} stages, the embedding on the "
            "first, the head and loss on the last"
        )
    if layout.recompute == "full":
        out.append("full recomputation: every block runs its forward again in the backward pass and keeps its input")
    elif layout.recompute == "selective" and not setup.has_scores:
        out.append("selective recomputation frees nothing here: the fused attention keeps no score matrix")
    if setup.fp8:
        out.append(
            "fp8-mixed: the blocks' weight matmuls at the fp8 peak with an activation cast each (Transformer Engine "
            "style), the rest in bf16; fp32 master weights and Adam state; MFU against the bf16 peak"
        )
    if dtype == "tf32" and "tf32" not in device.dtypes():
        out.append(f"{device.id} has no tf32: matrix ops run in fp32")
    if profile.precision != config.precision:
        out.append(f"profile made under {profile.precision}, estimated under {config.precision}: dtypes remapped")
    if not profile.linear_in_batch:
        out.append("the profile's cost is not linear in the batch: other batch sizes are approximate")
    if profile.memory.activation_parts is None and (layout.tp > 1 or layout.pp > 1 or layout.cp > 1):
        out.append("the profile predates the activation split: the 10/34 split of Korthikanti et al. is assumed")
    return out
