"""What an estimate reports beside its numbers: per-dimension traffic and the assumptions it rests on."""

from __future__ import annotations

from pydantic import BaseModel, Field

from advisor.estimator.config import Config
from advisor.estimator.layout import Layout
from advisor.estimator.roofline import cuda_core_factor, peak_for
from advisor.estimator.setup import Setup
from advisor.vocab import COMPUTE_DTYPE


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


def comm_report(setup: Setup, out: dict, layout: Layout) -> tuple[dict[str, DimComm], Comm]:
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


def assumptions(setup: Setup, config: Config, peak: float) -> list[str]:
    device, eff, fabric, profile = setup.device, setup.eff, setup.fabric, setup.profile
    dtype = COMPUTE_DTYPE[config.precision]
    layout = config.layout
    out = [
        f"profile {profile.name} made from {profile.made_from()}",
        f"datasheet: {device.name}: {dtype} matrix peak {peak / 1e12:.4g} TFLOP/s, memory bandwidth "
        f"{device.memory_bandwidth / 1e9:.4g} GB/s ({device.source}, as of {device.as_of})",
        f"efficiency profile {eff.id}: top matmul {eff.matrix[-1].efficiency:g}, top bandwidth "
        f"{eff.memory[-1].efficiency:g}, per-op overhead {eff.op_overhead_s * 1e6:.3g} µs; {eff.note}",
        f"memory reserve {eff.memory_reserve_bytes / 1e9:.3g} GB + {100 * eff.memory_reserve_fraction:.3g} % of "
        "capacity (context, workspaces, fragmentation)",
    ]
    _, unit = peak_for(device, dtype, "matrix")
    cores = cuda_core_factor(device, eff, dtype, unit)
    if cores != 1.0:
        share = device.fp32_gemm_share or eff.fp32_gemm_share
        whose = "this device's" if device.fp32_gemm_share else f"{eff.id}'s median"
        out.append(
            f"{dtype} GEMMs on the CUDA cores at {cores:.3g} x the matrix curve's rate: {whose} measured fp32 GEMM "
            f"share {share:g} over the tensor share {eff.gemm_share:g} the curve assumes (top "
            f"{eff.matrix[-1].efficiency * cores:.3g} of the fp32 peak)"
        )
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
    if setup.framework:
        why = "--kernels fused" if config.kernels == "fused" else "a model this size or fp8 implies a framework"
        out.append(
            f"fused kernels ({why}): the blocks' elementwise ops keep {setup.fused:g} of their eager time ({eff.id} "
            "fused_elementwise); block activations at most Megatron's 34·s·h bytes per sample with no attention "
            "scores (flash attention); --kernels eager for plain PyTorch"
        )
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
    if profile.memory.activation_parts is None and (layout.tp > 1 or layout.pp > 1 or layout.cp > 1):
        out.append("the profile predates the activation split: the 10/34 split of Korthikanti et al. is assumed")
    return out
