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
from advisor.profiler.schema import OpRecord
from advisor.vocab import COMPUTE_DTYPE, DTYPE_BYTES, DTYPES, FLOAT_DTYPES, canonical_dtype


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


def effective_dtype(op_dtype: str, category: str, profiled: str, target: str) -> str:
    """The dtype an op computes in when a profile made under `profiled` precision runs under `target`
    (always a catalog spelling: the profiler's 'fp8_e4m3' computes as 'fp8')."""
    op_dtype = canonical_dtype(op_dtype)
    if profiled == target or op_dtype not in FLOAT_DTYPES:
        return op_dtype
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


def overhead_for(eff: Efficiency, phase: str | None) -> float:
    """Fixed cost of one op: the calibrated cost of its phase where there is one, else the family's figure."""
    return eff.phase_overhead_s.get(phase, eff.op_overhead_s) if phase else eff.op_overhead_s


CONV_OPS = ("aten.convolution", "aten.convolution_backward", "aten._convolution")


def efficiency_source(eff: Efficiency, category: str, dtype: str, op: str | None = None) -> tuple:
    """Where an op's compute η comes from: (constant η, None, None), or (None, matmul curve by FLOPs per call,
    convolution curve by FLOPs per byte or None). `compute_efficiency` evaluates it for one call; the
    estimator's op tables (advisor/estimator/passes.py) for many at once."""
    if op in eff.op_efficiency:
        return eff.op_efficiency[op], None, None
    if category != "matrix":
        return eff.vector, None, None
    curve = eff.matrix_by_dtype.get(dtype) or eff.matrix_by_dtype.get("fp32" if dtype == "tf32" else "") or eff.matrix
    conv = eff.conv_by_intensity if op in CONV_OPS else None
    return None, curve, conv


def compute_efficiency(
    eff: Efficiency,
    category: str,
    dtype: str,
    flops_per_call: float,
    op: str | None = None,
    bytes_per_call: float = 0.0,
) -> float:
    """η of a compute-bound op. A matmul-class op follows a matmul curve (the calibrated one of its dtype
    where there is one) even when it lands on the vector units, as fp32 GEMMs do on a CPU: its efficiency
    still grows with its size. Elementwise and reduction work gets the flat vector figure."""
    constant, curve, conv = efficiency_source(eff, category, dtype, op)
    if constant is not None:
        return constant
    if conv and bytes_per_call > 0:
        # A convolution's efficiency follows its arithmetic intensity (FLOPs per byte): a depthwise 3x3
        # does 9 multiply-adds per element and is starved, a dense 3x3 behaves like a GEMM.
        return Efficiency.at(conv, flops_per_call / bytes_per_call)
    return Efficiency.at(curve, flops_per_call)


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
) -> OpTime:
    """Time of `count` calls of one op whose totals over those calls are `flops` and `nbytes`."""
    calls = max(count, 1.0)
    f_call, b_call = flops / calls, nbytes / calls
    overhead = overhead_for(eff, phase) * calls
    t_mem = b_call / (device.memory_bandwidth * Efficiency.at(eff.memory, b_call)) if b_call > 0 else 0.0
    t_cmp, unit = 0.0, "memory"
    if f_call > 0 and category != "memory":
        peak, unit = peak_for(device, dtype, category)
        t_cmp = f_call / (peak * compute_efficiency(eff, category, dtype, f_call, op, b_call))
    body = max(t_cmp, t_mem) * calls
    compute_bound = t_cmp >= t_mem and t_cmp > 0
    return OpTime(
        seconds=body + overhead,
        compute_s=body if compute_bound else 0.0,
        memory_s=0.0 if compute_bound else body,
        overhead_s=overhead,
        flops=flops,
        bytes=nbytes,
        unit=unit,
        dtype=dtype,
    )


def profile_op_time(
    op: OpRecord, device: Device, eff: Efficiency, profiled: str, precision: str, batch: float
) -> OpTime:
    """Time of one profile record (all its calls) at micro-batch `batch` under `precision`: the one per-op
    timing that the estimator, the roofline plot and calibration all use. The op computes in the dtype the
    precision gives it (`effective_dtype`) and moves its bytes rescaled to that dtype's width."""
    dtype = effective_dtype(op.dtype, op.category, profiled, precision)
    scale = byte_scale(op.dtype, dtype) if dtype != op.dtype else 1.0
    nbytes = (op.bytes_read.at(batch) + op.bytes_written.at(batch)) * scale
    return op_time(device, eff, op.flops.at(batch), nbytes, op.count, op.category, dtype, phase=op.phase, op=op.op)
