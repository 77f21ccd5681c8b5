"""Per-op roofline: an op takes the longer of its compute and its memory traffic, plus a fixed cost.

    t_op = max(F / (P[dtype, unit] · η_c(F)), B / (BW · η_m(B))) + t_overhead

P is the dense datasheet peak of the unit the op runs on (the matrix unit for matmul-class ops in a
dtype it supports, else the vector units), η are the achievable fractions from the device family's
efficiency profile (catalog data, replaced by `advisor calibrate`), and the overhead is the eager
framework's per-op cost. Times are per call; a record that ran `count` times costs `count` calls.

Matmul-class ops follow a matmul efficiency curve by FLOPs per call on whichever unit they land (on a CPU
fp32 GEMMs run on the vector units but still speed up with size); a calibrated profile may hold one curve
per dtype. The fixed cost per op differs by phase in eager training (forward pays for Python module calls,
backward for the autograd engine, the optimizer for its foreach kernels), so a calibrated profile may
hold one per phase.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.catalog.schema import Device, Efficiency
from advisor.profiler.schema import OpRecord, Profile
from advisor.vocab import (
    COMPUTE_DTYPE,
    CPU_CAST,
    DEPTHWISE,
    DTYPE_BYTES,
    DTYPES,
    EMBEDDING_GRADS,
    FLOAT_DTYPES,
    PARAM_BYTES,
    TRANSPOSED,
    canonical_dtype,
)


@dataclass
class OpTime:
    seconds: float
    compute_s: float  # part of `seconds` that was compute-bound (incl. its overhead)
    memory_s: float  # part that was memory-bound
    overhead_s: float  # fixed per-op costs
    flops: float
    bytes: float
    unit: str  # "matrix" | "vector" | "memory"
    dtype: str
    host_calls: float = 0.0  # eager ops the host issues for it (a library's own kernels: none)


def effective_dtype(op_dtype: str, category: str, profiled: str, target: str, phase: str | None = None) -> str:
    """The dtype an op computes in when a profile made under `profiled` precision runs under `target`
    (always a catalog spelling: the profiler's 'fp8_e4m3' computes as 'fp8'). Under mixed precision the
    optimizer updates fp32 master weights whatever the model's dtype (torch.amp keeps the parameters in fp32;
    apex O2 and Megatron keep an fp32 copy beside 16-bit ones), so a 16-bit profile's optimizer ops run in fp32."""
    op_dtype = canonical_dtype(op_dtype)
    if profiled == target or op_dtype not in FLOAT_DTYPES:
        return op_dtype
    if phase == "optimizer" and PARAM_BYTES.get(target) == 4 and op_dtype in ("bf16", "fp16"):
        return "fp32"
    if category == "matrix":
        return COMPUTE_DTYPE[target]
    # Vector ops follow their tensors: 16-bit under pure bf16, fp32 stays fp32 under mixed precision.
    if target == "bf16":
        return "bf16"
    if op_dtype in ("bf16", "fp16") and target in ("fp32", "tf32"):
        return "fp32"
    if op_dtype in ("bf16", "fp16") and target in ("bf16-mixed", "fp16-mixed", "fp8-mixed"):
        return COMPUTE_DTYPE[target]
    return op_dtype


def byte_scale(op_dtype: str, new_dtype: str) -> float:
    old = DTYPE_BYTES.get(canonical_dtype(op_dtype))
    new = DTYPE_BYTES.get(canonical_dtype(new_dtype))
    return new / old if old and new else 1.0


def peak_for(device: Device, dtype: str, category: str) -> tuple[float | None, str]:
    """Peak FLOP/s for an op and the unit it lands on. tf32 falls back to fp32 where there is no tf32."""
    dtype = canonical_dtype(dtype)
    if category == "matrix":
        peak = device.matrix_flops.get(dtype)
        if peak:
            return peak, "matrix"
        if dtype == "tf32" and device.matrix_flops.get("fp32"):
            return device.matrix_flops.get("fp32"), "matrix"
    lookup = "fp32" if dtype == "tf32" else dtype
    # Integer and bool work (indices, masks) has no catalog rate: it runs on the vector units at about fp32's.
    peak = device.vector_flops.get(lookup) if lookup in DTYPES else None
    if peak:
        return peak, "vector"
    # A vector unit without a 16-bit rate computes 16-bit elementwise ops at its fp32 rate.
    return device.vector_flops.get("fp32"), "vector"


def launch_for(eff: Efficiency) -> float:
    """Device time between kernels a library launches back to back (`launch_s`, else the per-op overhead)."""
    return eff.launch_s if eff.launch_s is not None else eff.op_overhead_s


def overhead_for(eff: Efficiency, phase: str | None) -> float:
    """Fixed cost of one op: the calibrated cost of its phase where there is one, else the family's figure."""
    return eff.phase_overhead_s.get(phase, eff.op_overhead_s) if phase else eff.op_overhead_s


REUSE_CAP = 8e6  # bytes: data touched once per step is looked up as cold at this size, no larger
COLD_BYTES = 64e6  # bytes a call: an op curve measured past this has timed data streamed from memory


FOREACH = "aten._foreach_"


def own_curve(eff: Efficiency, op: str | None):
    """The op's own measured curve (calibrated `op_curves`), or None. A multi-tensor update (the optimizers'
    `_foreach` path, what a profile on CUDA or meta records) reads its single-tensor form's: the same work per
    element over every tensor of its list (aten._foreach_add_ -> aten.add_; _foreach_div_, measured out of place
    only, -> aten.div)."""
    if not op:
        return None
    curve = eff.op_curves.get(op)
    if curve is None and op.startswith(FOREACH):
        single = "aten." + op[len(FOREACH) :]
        curve = eff.op_curves.get(single) or eff.op_curves.get(single.rstrip("_"))
    return curve


def reuse_cap(eff: Efficiency, op: str) -> float:
    """How far an optimizer update's reuse distance (the whole step's traffic) may be looked up on its curve.
    The memory curve past a few MB measures fresh allocations (glibc maps each one anew), which an in-place
    update never makes: REUSE_CAP. An op whose own curve was measured on data streamed from memory (in place,
    past COLD_BYTES a call: `advisor calibrate`'s cold point) is looked up at the whole distance: the cache
    holds none of what the last step touched."""
    curve = own_curve(eff, op)
    return float("inf") if curve and curve[-1].min_size >= COLD_BYTES else REUSE_CAP


# Optimizer-phase ops that only the first step runs (creating its state): a steady-state step has none.
STATE_INIT = ("aten.zeros_like", "aten.zeros", "aten.empty_like", "aten.empty", "aten.full_like", "aten.clone")
SCATTERS = EMBEDDING_GRADS
CONV_FORWARD = ("aten.convolution", "aten._convolution")
CONV_OPS = (*CONV_FORWARD, "aten.convolution_backward")
GEMM_OPS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten.matmul", "aten.linear")


def matrix_curve(eff: Efficiency, dtype: str):
    """The matmul curve a dtype reads: its calibrated one (tf32 falls back to fp32's), else the family's."""
    return eff.matrix_by_dtype.get(dtype) or eff.matrix_by_dtype.get("fp32" if dtype == "tf32" else "") or eff.matrix


def efficiency_source(
    eff: Efficiency, category: str, dtype: str, op: str | None = None, variant: str | None = None
) -> tuple:
    """Where an op's compute η comes from: (constant η, None, None, None, 1), or (None, matmul curve by FLOPs
    per call, convolution curve by FLOPs per byte that replaces it or None, cap by FLOPs per byte that the size
    curve is held under or None, scale of the size curve). `variant` is the op's kernel variant
    (kernels.kernel_variant): a GEMM's cap is its layout's where the family measured one, else the layouts' mean; a
    depthwise (transposed) convolution reads the depthwise (transposed) curves where the family has them, else the
    convolution curves.
    `compute_efficiency` evaluates it for one call; the estimator's op tables (advisor/estimator/passes.py) for many
    at once."""
    if op in eff.op_efficiency:
        return eff.op_efficiency[op], None, None, None, 1.0
    if category != "matrix":
        return eff.vector, None, None, None, 1.0
    curve = matrix_curve(eff, dtype)
    if op in CONV_OPS:
        backward = op == "aten.convolution_backward"
        conv = None
        if variant == DEPTHWISE:
            conv = eff.depthwise_backward_by_intensity if backward else eff.depthwise_by_intensity
        elif variant == TRANSPOSED:
            conv = eff.transposed_backward_by_intensity if backward else eff.transposed_by_intensity
        conv = conv or (eff.conv_backward_by_intensity if backward else None) or eff.conv_by_intensity
        return None, curve, conv, None, 1.0 if conv else (eff.conv_scale or 1.0)
    cap = (eff.matmul_by_layout.get(variant or "") or eff.matmul_by_intensity) if op in GEMM_OPS else None
    return None, curve, None, cap, 1.0


def gemm_factor(device: Device, eff: Efficiency) -> float:
    """How much faster (or slower) this device's tensor cores run than its family's matrix curves assume: its
    measured best-shape GEMM share over the family's (1 where either is missing)."""
    if device.gemm_share and eff.gemm_share:
        return device.gemm_share / eff.gemm_share
    return 1.0


def cuda_core_factor(device: Device, eff: Efficiency, dtype: str, unit: str) -> float:
    """How much faster (or slower) an fp32 GEMM on a GPU's CUDA cores (`unit` "vector") runs than the family's
    matrix curve read at its own speed (`size_factor`) gives: the fp32 GEMM share measured on the device (else
    the family's) over the tensor-core share the curves assume, both from the same benchmark. 1 where a figure
    is missing, for other dtypes and units, and where the dtype has a calibrated curve of its own."""
    if unit != "vector" or canonical_dtype(dtype) not in ("fp32", "tf32") or not eff.matrix_reference:
        return 1.0
    share = device.fp32_gemm_share or eff.fp32_gemm_share
    if not share or not eff.gemm_share or matrix_curve(eff, dtype) is not eff.matrix:
        return 1.0
    return share / eff.gemm_share


def size_factor(device: Device, eff: Efficiency, dtype: str, peak: float | None) -> float:
    """How many FLOPs of the family's reference dtype (`matrix_reference`) take the time of one FLOP of a GEMM
    that runs at `peak` (1: same speed or faster, no reference, or a curve measured for its own dtype): the
    `matrix` size curve is looked up at FLOPs x this factor."""
    if not eff.matrix_reference or not peak or matrix_curve(eff, dtype) is not eff.matrix:
        return 1.0
    reference = device.matrix_flops.get(eff.matrix_reference)
    return max(1.0, reference / peak) if reference else 1.0


def compute_efficiency(
    eff: Efficiency,
    category: str,
    dtype: str,
    flops_per_call: float,
    op: str | None = None,
    bytes_per_call: float = 0.0,
    size_scale: float = 1.0,
    variant: str | None = None,
) -> float:
    """η of a compute-bound op. A matmul-class op follows a matmul curve (the calibrated one of its dtype
    where there is one) even when it lands on the vector units, as fp32 GEMMs do on a CPU: its efficiency
    still grows with its size. Elementwise and reduction work gets the flat vector figure.

    Size is not the whole story: at the same FLOPs a GEMM with one small dimension (a small batch, one
    recurrent step) moves far more bytes per FLOP than a square one, and a convolution's efficiency follows
    its arithmetic intensity too (a depthwise 3x3 does 9 multiply-adds per element and is starved, a dense
    3x3 behaves like a GEMM). Where the profile has an intensity curve, η is the lower of the two."""
    constant, curve, conv, cap, scale = efficiency_source(eff, category, dtype, op, variant)
    if constant is not None:
        return constant
    by_size = Efficiency.at(curve, flops_per_call * size_scale)
    if bytes_per_call <= 0:
        return by_size
    intensity = flops_per_call / bytes_per_call
    if conv:
        return Efficiency.at(conv, intensity)
    if cap:
        return min(by_size, Efficiency.at(cap, intensity))
    return by_size * scale


def handoff_factor(eff: Efficiency, nbytes: float) -> float:
    """The share of its measured rate a memory-bound call of `nbytes` keeps in a step on a many-thread CPU, where
    its input comes from another op whose threads split the data otherwise (Efficiency.handoff; 1 without)."""
    return Efficiency.at(eff.handoff, nbytes) if eff.handoff else 1.0


def in_turn_factor(eff: Efficiency, nbytes: float, category: str, phase: str | None, op: str | None = None) -> float:
    """The share of the memory curve's streaming rate a call of `nbytes` keeps once the cost of running in turn with
    a step's other ops is added, its fresh output written to memory no recent call touched (Efficiency.vector_in_turn;
    1 without). Only for ops that write a fresh output: an in-place op (`op` ending in '_': a ReLU in place, a
    dropout's draw) writes where it read, in the cache; matrix ops have their own (a CPU convolution's curves were
    scaled in turn); the optimizer's updates are looked up by the whole step's traffic (reuse_cap) instead."""
    if not eff.vector_in_turn or not writes_fresh(category, phase, op):
        return 1.0
    return Efficiency.at(eff.vector_in_turn, nbytes)


def fresh_output_s(
    device: Device, eff: Efficiency, written: float, footprint: float, category: str, phase: str | None, op: str | None
) -> float:
    """The least time a call that writes `written` bytes of fresh output takes in a step that touches `footprint`
    bytes: the rate at which a step's ops write fresh outputs in turn (Efficiency.fresh_output, a share of the memory
    bandwidth by the step's bytes: the memory an output lands in was last touched about a step ago, in the cache
    for a small step, beyond it for a large one); 0 without the figure. For the ops in_turn_factor applies to. A
    floor under the call's whole time: an op slow for its bytes writes its output while it computes (on the
    project's Xeon VM an add, a ReLU and a GELU kept in turn took 68-77 µs a 1 MB output at two threads, a max pool
    no longer than alone: benchmarks/memory_side.py), while a copy, a zeroed gradient table or an add cannot go
    faster (the layout copies of a hand-written attention ran at 12 GB/s in a step, their rate alone 120)."""
    if not eff.fresh_output or written <= 0 or not writes_fresh(category, phase, op):
        return 0.0
    return written / (device.memory_bandwidth * Efficiency.at(eff.fresh_output, footprint))


def stream_extra_s(device: Device, eff: Efficiency, b_call: float, b_look: float, share: float) -> float:
    """Seconds a memory-side share (`share` of the streaming rate: in_turn_factor's, or handoff_factor's for an op
    with its own curve) adds to one call of `b_call` bytes: its bytes at the memory curve's streaming rate, over the
    share, less that time. A cost of where the data is, so added to the op's time whatever its own rate: a max
    pool's windows, a batch norm's passes or a random draw, timed alone far slower than streaming their bytes, do
    not slow down in proportion (on the project's Xeon VM, benchmarks/memory_side.py: kept in turn a max pool or a
    draw ran within 6 % of its time alone, where an add or a ReLU ran 1.8-5x)."""
    if share >= 1.0 or b_call <= 0:
        return 0.0
    return b_call / (device.memory_bandwidth * Efficiency.at(eff.memory, b_look)) * (1.0 / share - 1.0)


def writes_fresh(category: str, phase: str | None, op: str | None) -> bool:
    """Whether a record's calls write a fresh output that in_turn_factor and fresh_output_s price: not matrix ops
    (a CPU convolution's curves were timed in turn), not the optimizer's updates (looked up by the step's traffic),
    not ops in place (their output is their input, in the cache)."""
    return category != "matrix" and phase != "optimizer" and not in_place(op)


def in_place(op: str | None) -> bool:
    """Whether aten op `op` writes into its input (its name ends in '_', as aten.relu_ and aten.bernoulli_ do)."""
    return bool(op) and op.endswith("_")


def op_time(
    device: Device,
    eff: Efficiency,
    flops: float,
    nbytes: float,
    count: float,
    category: str,
    dtype: str,
    phase: str | None = None,
    op: str | None = None,
    reuse_bytes: float = 0.0,
    written: float = 0.0,
    footprint: float = 0.0,
    fixed_s: float | None = None,
    eta_scale: float = 1.0,
    serial_bytes: float = 0.0,
    vector_unit: bool = False,
    cap_bytes: float | None = None,
    flops_cap: float = 0.0,
    floor_s: float = 0.0,
    variant: str | None = None,
    curve_scale: float = 1.0,
    reorder_s: float = 0.0,
) -> OpTime:
    """Time of `count` calls of one op whose totals over those calls are `flops` and `nbytes`.

    Memory efficiency is looked up by the bytes of one call, or by `reuse_bytes` when that is larger: the
    bytes the step touches between two uses of this op's data (an optimizer update finds its parameters and
    state where the whole last step left them, not in the cache a call of its own size would).
    `written` (total over the calls) are the bytes of fresh output; no call takes less than writing them at the rate
    a step of `footprint` bytes writes fresh outputs (`fresh_output_s`; the call's own bytes when 0).
    `fixed_s` replaces the per-op overhead (total over the calls: kernels a library launches itself pay
    none); `eta_scale` scales compute efficiency (wave quantization); `serial_bytes` are moved by separate
    kernels around the op (layout transposes); `vector_unit` runs a matrix op on the vector units; `cap_bytes`
    (total over the calls) replaces `nbytes` in a GEMM's FLOPs-per-byte cap when some of its operands come
    from the cache (a recurrent layer's weights, see `profile_op_time`); `flops_cap` (FLOP/s, 0: none) bounds
    the compute rate of a GEMM the library runs on its slow unaligned kernels (`kernels.gemm_unaligned`); `floor_s`
    is the least one call takes on the kernels the library picks for its shapes (`kernels.channel_block_s`);
    `variant` the op's kernel variant (`kernels.kernel_variant`: a matmul's GEMM layout, a depthwise convolution);
    `curve_scale` multiplies the time an op's own curve gives, or a memory-bound op's by the memory curve
    (`kernels.curve_factor`: a draw at another probability than its curve's, a copy between layouts); `reorder_s`
    (total over the calls) is a CPU convolution's layout reorders (`kernels.reorder_s`), memory-bound work of their
    own."""
    calls = max(count, 1.0)
    f_call, b_call = flops / calls, nbytes / calls
    b_look = max(b_call, reuse_bytes)
    overhead = overhead_for(eff, phase) * calls if fixed_s is None else fixed_s
    curve = own_curve(eff, op)
    if curve:
        # a measured op: its own roofline at the device's peaks, over the efficiency measured at this size
        peak, unit = peak_for(device, dtype, "vector")
        unit = unit if f_call > 0 and category != "memory" else "memory"
        eta = Efficiency.at(curve, b_look) / curve_scale
        t_cmp = f_call / (peak * eta) if f_call > 0 and category != "memory" else 0.0
        t_mem = b_call / (device.memory_bandwidth * eta) if b_call > 0 else 0.0
    else:
        t_mem = (
            b_call / (device.memory_bandwidth * Efficiency.at(eff.memory, b_look)) * curve_scale if b_call > 0 else 0.0
        )
        t_cmp, unit = 0.0, "memory"
        if f_call > 0 and category != "memory":
            peak, unit = peak_for(device, dtype, "vector" if vector_unit else category)
            b_cap = b_call if cap_bytes is None else cap_bytes / calls
            scale = size_factor(device, eff, dtype, peak) if category == "matrix" and op not in CONV_OPS else 1.0
            if unit == "matrix":
                peak *= gemm_factor(device, eff)
            elif category == "matrix" and op not in CONV_OPS:
                peak *= cuda_core_factor(device, eff, dtype, unit)
            eta = compute_efficiency(eff, category, dtype, f_call, op, b_cap, scale, variant) * eta_scale
            t_cmp = f_call / (peak * eta)
            if flops_cap > 0:
                t_cmp = max(t_cmp, f_call / flops_cap)
    handoff = handoff_factor(eff, b_look)
    if not curve:  # memory-bound at the memory curve: the share of its rate (what stream_extra_s adds, for these)
        t_mem /= handoff
    t_serial = serial_bytes / calls / (device.memory_bandwidth * Efficiency.at(eff.memory, serial_bytes / calls))
    body = max(t_cmp, t_mem, eff.min_op_s.get(op, 0.0) if op else 0.0, floor_s)
    body += eff.op_setup_s.get(op, 0.0) if op else 0.0  # a library call's fixed cost, whatever its size
    body += stream_extra_s(device, eff, b_call, b_look, in_turn_factor(eff, b_look, category, phase, op))
    if curve:  # a measured op reading what another op's threads wrote: that data's bytes, on top of its own time
        body += stream_extra_s(device, eff, b_call, b_look, handoff)
    window = eff.op_window.get(op) if curve else None
    if window:  # a pooling window wider or denser than the one its curve was measured on
        body += window.seconds_per_flop * max(0.0, f_call - window.flops_per_byte * b_call)
    fresh = fresh_output_s(device, eff, written / calls, footprint or b_look, category, phase, op)
    body = max(body, fresh - t_serial)  # no faster than the step's ops write fresh outputs, its own passes included
    compute_bound = t_cmp >= t_mem and t_cmp > 0
    return OpTime(
        seconds=(body + t_serial) * calls + reorder_s + overhead,
        compute_s=body * calls if compute_bound else 0.0,
        memory_s=(0.0 if compute_bound else body * calls) + t_serial * calls + reorder_s,
        overhead_s=overhead,
        flops=flops,
        bytes=nbytes + serial_bytes,
        unit=unit,
        dtype=dtype,
    )


def profile_op_time(
    op: OpRecord,
    device: Device,
    eff: Efficiency,
    profiled: str,
    precision: str,
    batch: float,
    step_bytes: float = 0.0,
    profile_batch: float | None = None,
    recurrent: bool = False,
    channels_last: bool = False,
) -> OpTime:
    """Time of one profile record (all its calls) at micro-batch `batch` under `precision`: the one per-op
    timing that the estimator, the roofline plot and calibration all use. The op computes in the dtype the
    precision gives it (`effective_dtype`) and moves its bytes rescaled to that dtype's width. An optimizer
    op's data comes back after the whole step (`step_bytes`, see `step_bytes`). What the device's kernels
    do with the op's shapes (tensor-core eligibility, layout transposes, wave quantization, alignment; see
    `kernels`) applies where the family's efficiency data says so. `recurrent`: the op belongs to a recurrent
    layer the device runs step by step (not fused): its calls reuse the same weights every time step, which
    stay in the cache, so the GEMM's FLOPs-per-byte cap (measured on operands from memory) counts only the
    bytes that grow with the batch (the record's per-sample bytes, not its fixed weight bytes). `channels_last`:
    the profile's convolutions run NHWC (`kernels.channels_last`), so its batch norms do too."""
    from advisor.estimator import kernels

    dtype = effective_dtype(op.dtype, op.category, profiled, precision, op.phase)
    gemms = kernels.native_gemms(op, eff, dtype, batch, profile_batch or batch) if op.category == "matrix" else []
    if gemms:  # a 1x1 convolution PyTorch runs on its native kernel: one GEMM a sample, one eager op a call
        parts = [profile_op_time(g, device, eff, profiled, precision, batch, step_bytes) for g in gemms]
        overhead = overhead_for(eff, op.phase) * op.count
        body = sum(t.seconds - t.overhead_s for t in parts)
        return OpTime(
            seconds=body + overhead,
            compute_s=sum(t.compute_s for t in parts),
            memory_s=sum(t.memory_s for t in parts),
            overhead_s=overhead,
            flops=sum(t.flops for t in parts),
            bytes=sum(t.bytes for t in parts),
            unit=parts[0].unit,
            dtype=dtype,
            host_calls=op.count,
        )
    scale = byte_scale(op.dtype, dtype) if dtype != op.dtype else 1.0
    nbytes = (op.bytes_read.at(batch) + op.bytes_written.at(batch)) * scale
    reuse = min(step_bytes, reuse_cap(eff, op.op)) if op.phase == "optimizer" else 0.0
    flops = op.flops.at(batch)
    calls = max(op.count, 1)
    extra = {}
    written = op.bytes_written.at(batch) * scale
    if op.op in SCATTERS and op.op in eff.op_curves:
        # a gather's gradient: the zeroed table (what it writes) as plain memory traffic, then the scatter-add
        # of the rows it reads by the op's own curve
        nbytes, extra = nbytes - written, {"serial_bytes": written}
    at_profile = op.flops.at(profile_batch) if profile_batch else 0.0
    growth = flops / at_profile if at_profile > 0 else 1.0  # the activations against the profile's, as the FLOPs
    if op.category == "matrix" and (
        eff.tensor_core_channels or eff.gemm_tile or eff.nchw_transpose or eff.conv_channel_block
    ):
        tensor = dtype not in kernels.TENSOR_CORE_DTYPES or kernels.tensor_cores(op, eff, dtype)
        busy, pad_bytes = kernels.channel_padding(op, eff, dtype)
        wave = kernels.wave_efficiency(op, device, eff, flops / max(op.count, 1)) if tensor else 1.0
        extra = {
            "vector_unit": not tensor,
            "eta_scale": wave * busy,
            "serial_bytes": kernels.transpose_bytes(op, eff, dtype, growth) + pad_bytes * growth,
            "flops_cap": kernels.unaligned_cap(device, eff) if tensor and kernels.gemm_unaligned(op, eff, dtype) else 0,
        }
    if eff.batch_norm_nchw is not None and not channels_last:
        extra["floor_s"] = kernels.channel_block_s(op, device, eff.batch_norm_nchw, dtype, batch)
    gather_s = kernels.row_gather_s(op, device, eff.row_gather, dtype, op.bytes_written.at(batch) * scale / calls)
    if gather_s:  # one thread block per looked-up row: short rows take the blocks' time, not the bytes'
        extra["floor_s"] = max(extra.get("floor_s", 0.0), gather_s)
    sort_bytes, launches = kernels.index_sort_cost(op, eff.index_sort, batch, profile_batch or batch)
    copied = kernels.strided_copy_bytes(op, dtype, profile_batch or batch, eff) * batch
    if copied:  # its non-contiguous gradient made contiguous first: one more kernel's traffic
        extra["serial_bytes"] = extra.get("serial_bytes", 0.0) + copied
    # a CPU linear layer's bias written into its output and read back by the GEMM; a CPU GEMM's fresh output
    over_output = (kernels.bias_bytes(op, eff, scale) + kernels.output_bytes(op, eff, scale)) * batch
    if over_output:
        extra["serial_bytes"] = extra.get("serial_bytes", 0.0) + over_output
    if sort_bytes:  # an embedding gradient's index sort: separate kernels around the op
        extra["serial_bytes"] = extra.get("serial_bytes", 0.0) + sort_bytes
        extra["fixed_s"] = overhead_for(eff, op.phase) * calls + launches * launch_for(eff)
    if recurrent and op.phase == "forward" and eff.loop_op_s is not None:
        extra["fixed_s"] = eff.loop_op_s * calls  # issued from the layer's C++ loop (Efficiency.loop_op_s)
    if recurrent and op.category == "matrix":
        extra["cap_bytes"] = (op.bytes_read.per_sample + op.bytes_written.per_sample) * batch * scale
    variant = kernels.kernel_variant(op, eff)
    if variant:
        extra["variant"] = variant
    passes = kernels.reorder_passes(op, eff, dtype, profile_batch or batch)
    if passes:  # a CPU convolution on NCHW tensors: oneDNN's layout reorders around it, at their own sizes
        extra["reorder_s"] = kernels.reorder_s(passes, device.memory_bandwidth, eff.conv_reorder, growth) * op.count
    factor = kernels.curve_factor(op, eff)
    if factor != 1.0:
        extra["curve_scale"] = factor
    t = op_time(
        device,
        eff,
        flops,
        nbytes,
        op.count,
        op.category,
        dtype,
        phase=op.phase,
        op=op.op,
        reuse_bytes=reuse,
        written=written,
        footprint=step_bytes,
        **extra,
    )
    t.host_calls = op.count
    return t


def profile_times(profile: Profile, device: Device, eff: Efficiency, precision: str, batch: float):
    """(phase, OpTime) of every op of one step at micro-batch `batch`: each profile record through
    `profile_op_time`, recurrent layers the device runs fused costed as such (`fused`), and the step's
    fixed costs (`step_overhead`), one op at a time. The estimator runs the same model vectorized over layouts
    (advisor/estimator/passes.py); this is its scalar reference, which the tests hold it to."""
    from advisor.estimator.fused import recurrent_modules, replaced_modules, rnn_times
    from advisor.estimator.kernels import channels_last

    moved = step_bytes(profile, batch)
    cpu = device.kind == "cpu"
    nhwc = channels_last(profile)
    fused = replaced_modules(profile, eff, cpu)
    stepped = recurrent_modules(profile, eff, cpu)
    out = []
    for op in profile.ops:
        if within(op.module, fused) or (op.layout == CPU_CAST and not cpu):  # CPU_CAST: GPUs cast as they load
            continue
        if op.phase == "optimizer" and op.op in STATE_INIT:
            continue  # the profiled step created the optimizer's state; steady-state steps do not
        recurrent = within(op.module, stepped)
        t = profile_op_time(
            op, device, eff, profile.precision, precision, batch, moved, profile.batch_size, recurrent, nhwc
        )
        out.append((op.phase, t))
    for rnn in profile.rnns:
        if rnn.module in fused:
            for phase, times in rnn_times(rnn, device, eff, precision, batch).items():
                out += [(phase, t) for t in times]
    for phase, seconds in step_overhead(profile, eff, stepped).items():
        out.append((phase, OpTime(seconds, 0.0, 0.0, seconds, 0.0, 0.0, "memory", "")))
    return out


def within(module: str, modules) -> bool:
    """Whether a module path is one of `modules` or inside one."""
    return module in modules or any(module.startswith(m + ".") for m in modules)


def step_bytes(profile: Profile, batch: float) -> float:
    """Bytes one training step moves (all phases): the reuse distance of data touched once per step."""
    return profile.bytes(batch)


def log_linear(points: list[tuple[float, float]], x: float) -> float:
    """y at `x` over (x, y) `points` listed by increasing x: straight on a log scale of x between points, the
    first point's y below them and the last one's beyond."""
    import math

    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if x <= x1:
            return y0 + math.log(x / x0) / math.log(x1 / x0) * (y1 - y0)
    return points[-1][1]


def optimizer_step_s(eff: Efficiency, moved: float, data_bytes: float = 0.0) -> float:
    """`Efficiency.optimizer_step` at a step that moves `moved` bytes, for an optimizer over `data_bytes` of
    parameters, gradients and state: each point's seconds plus its seconds per byte times `data_bytes`, log-linear
    between the measured points, the first point's below them and the last one's beyond; 0 where the family
    measured none."""
    points = eff.optimizer_step
    if not points:
        return 0.0
    return log_linear([(p.step_bytes, p.seconds + p.seconds_per_byte * data_bytes) for p in points], moved)


def step_overhead(profile: Profile, eff: Efficiency, stepped: set[str] | None = None) -> dict[str, float]:
    """Fixed costs of one step that no single op carries, by phase: the Python of each nn.Module call in
    the forward pass (hooks, __call__, the module's own code), where the efficiency profile measured it, and of
    each call of a recurrent layer run step by step (`stepped`, fused.recurrent_modules; Efficiency.loop_call_s)."""
    if eff.host_op_s:
        return {}
    seconds = eff.module_overhead_s * profile.module_calls if eff.module_overhead_s and profile.module_calls else 0.0
    seconds += loop_calls_s(profile, eff, stepped or set())
    return {"forward": seconds} if seconds else {}


def loop_calls_s(profile: Profile, eff: Efficiency, stepped: set[str]) -> float:
    """The Python of the calls of the recurrent layers run step by step (`stepped`), at Efficiency.loop_call_s."""
    if not eff.loop_call_s or not stepped:
        return 0.0
    return eff.loop_call_s * sum(r.count for r in profile.rnns if r.module in stepped)


def host_bound(
    sums: dict[str, list[float]], calls: dict[str, float], profile: Profile, eff: Efficiency
) -> dict[str, list[float]]:
    """On an asynchronous device (eff.host_op_s set) the host issues ops while the device runs earlier ones:
    a phase takes the longer of the two, so small ops cost the host's time per op (Python, dispatch,
    launch), large ones only their kernels. `sums` holds [seconds, compute, memory, overhead, flops, bytes]
    per phase and `calls` the eager ops the host issues in it (OpTime.host_calls); the host's excess is
    added as overhead."""
    if not eff.host_op_s:
        return sums
    for phase, acc in sums.items():
        host = calls.get(phase, 0) * eff.host_phase_s.get(phase, eff.host_op_s)
        if phase == "forward" and eff.module_overhead_s and profile.module_calls:
            host += eff.module_overhead_s * profile.module_calls
        if host > acc[0]:
            acc[3] += host - acc[0]
            acc[0] = host
    return sums
