"""Forward, backward and optimizer times of a profile on one device under many layouts at once.

Each record's time is the roofline of `roofline.profile_op_time` (tests check every record of the shipped
profiles agrees with it): `max(F/(P·η_c), B/(BW·η_m)) + overhead` per call. A layout changes what one call
does: tensor parallelism divides the split records' per-sample work and their weights by tp (sequence
parallelism the others' per-sample work too), context parallelism divides every record's per-sample work by
cp; the efficiency curves then see the smaller calls. Here those are numpy arrays over records × layouts,
so that thousands of (micro-batch, tp, cp, sp) groups cost one vectorized pass (the layout search).

Under fp8-mixed the blocks' weight matmuls run on the device's FP8 tensor-unit peak with FP8 operands, and
each one adds the cast a Transformer-Engine-style recipe runs before it: its activation input read in 16-bit
and written in 8-bit (taken as 0.75 × the matmul's per-sample bytes) as its own memory-bound kernel. Weights
are cast once per step and cached over micro-batches (not counted).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.catalog.schema import Device, Efficiency
from advisor.estimator.parallel.tensor import Roles
from advisor.estimator.roofline import byte_scale, effective_dtype, efficiency_source, overhead_for, peak_for
from advisor.profiler.schema import Profile
from advisor.vocab import BLOCK_MATMUL_DTYPE

REGIONS = ("before", "block", "after")
FP8_CAST_SHARE = 0.75
# The sums a pass evaluation returns, each an array over the layouts evaluated:
# (region, phase) for region in before|block|after|core and phase in forward|backward, the optimizer, and the
# forward weight casts of each region (what a run that keeps 16-bit weights does not do).
KEYS = tuple((r, p) for r in (*REGIONS, "core") for p in ("forward", "backward")) + (
    ("optimizer", "optimizer"),
    *((f"cast-{r}", "forward") for r in REGIONS),  # the forward weight casts of each region (also in its sum)
    ("elementwise", "forward"),  # the blocks' elementwise and memory-bound ops (also in the block sums)
    ("elementwise", "backward"),
)


def _curve(steps) -> tuple[np.ndarray, np.ndarray]:
    return np.array([s.min_size for s in steps]), np.array([s.efficiency for s in steps])


def _at(curve: tuple[np.ndarray, np.ndarray], size: np.ndarray) -> np.ndarray:
    """Efficiency.at over an array of sizes: the last step whose min_size the size reaches."""
    sizes, values = curve
    return values[np.clip(np.searchsorted(sizes, size, side="right") - 1, 0, None)]


@dataclass
class OpTable:
    """Per-record constants of one profile on one device under one precision (arrays of length N)."""

    f_fix: np.ndarray
    f_per: np.ndarray
    b_fix: np.ndarray
    b_per: np.ndarray
    calls: np.ndarray
    overhead: np.ndarray  # per call
    peak: np.ndarray  # 0 where the op does no compute on a unit
    eta: np.ndarray  # constant η, nan where a curve decides
    curve: np.ndarray  # index into `curves` (-1: none)
    conv: np.ndarray  # index into `curves` of the convolution curve (-1: none)
    curves: list
    memory_curve: tuple
    bandwidth: float
    sharded: np.ndarray
    layout_free: np.ndarray  # optimizer records: evaluated at the whole model
    masks: np.ndarray  # N × len(KEYS): which sum each record adds to
    dtypes: list[str]


@dataclass
class _Records:
    """The device-independent part of an op table: one profile under one precision."""

    rows: list[tuple]  # (record index, category, dtype, op name, phase)
    values: np.ndarray  # N × 4: flops fixed, flops per sample, bytes fixed, bytes per sample
    calls: np.ndarray
    sharded: np.ndarray
    free: np.ndarray
    masks: np.ndarray


_RECORDS: dict = {}


def _records(profile: Profile, roles: Roles, precision: str) -> _Records:
    key = (id(profile), id(roles), precision)
    hit = _RECORDS.get(key)
    if hit is not None and hit[0] is profile:
        return hit[1]
    fp8 = BLOCK_MATMUL_DTYPE.get(precision)
    rows: list[tuple] = []
    values: list[tuple] = []
    for i, op in enumerate(profile.ops):
        dtype = effective_dtype(op.dtype, op.category, profile.precision, precision)
        if fp8 and roles.block_matmul[i]:
            dtype = fp8
        scale = byte_scale(op.dtype, dtype) if dtype != op.dtype else 1.0
        rows.append((i, op.category, dtype, op.op, op.phase))
        values.append(
            (
                op.flops.fixed,
                op.flops.per_sample,
                (op.bytes_read.fixed + op.bytes_written.fixed) * scale,
                (op.bytes_read.per_sample + op.bytes_written.per_sample) * scale,
            )
        )
        if fp8 and roles.block_matmul[i]:
            cast = (op.bytes_read.per_sample + op.bytes_written.per_sample) * byte_scale(op.dtype, "bf16")
            rows.append((i, "memory", "bf16", "fp8.cast", op.phase))
            values.append((0.0, 0.0, 0.0, FP8_CAST_SHARE * cast))
    n = len(rows)
    masks = np.zeros((n, len(KEYS)))
    calls = np.zeros(n)
    sharded = np.zeros(n, dtype=bool)
    free = np.zeros(n, dtype=bool)
    for j, (i, category, _dtype, name, phase) in enumerate(rows):
        op = profile.ops[i]
        calls[j] = max(op.count, 1.0)
        region = roles.region[i]
        sharded[j] = roles.sharded[i]
        free[j] = region == "optimizer"
        if region == "optimizer":
            masks[j, KEYS.index(("optimizer", "optimizer"))] = 1.0
            continue
        masks[j, KEYS.index((region, phase))] = 1.0
        if roles.core[i]:
            masks[j, KEYS.index(("core", phase))] = 1.0
        if roles.weight_cast and roles.weight_cast[i] and name == op.op:
            masks[j, KEYS.index((f"cast-{region}", "forward"))] = 1.0
        elif region == "block" and category != "matrix":
            masks[j, KEYS.index(("elementwise", phase))] = 1.0
    out = _Records(rows, np.asarray(values, dtype=float).reshape(n, 4), calls, sharded, free, masks)
    if len(_RECORDS) > 64:  # a long-lived process with many profiles: forget the old ones
        _RECORDS.clear()
    _RECORDS[key] = (profile, out)
    return out


def op_table(profile: Profile, roles: Roles, device: Device, eff: Efficiency, precision: str) -> OpTable:
    rec = _records(profile, roles, precision)
    curves: list = []
    curve_ids: dict[int, int] = {}

    def curve_index(steps) -> int:
        if steps is None:
            return -1
        if id(steps) not in curve_ids:
            curve_ids[id(steps)] = len(curves)
            curves.append(_curve(steps))
        return curve_ids[id(steps)]

    n = len(rec.rows)
    peak, eta, curve, conv, overhead = (np.zeros(n) for _ in range(5))
    device_constants: dict[tuple, tuple] = {}  # the few distinct (category, dtype, op, phase) of a profile
    for j, (_i, category, dtype, name, phase) in enumerate(rec.rows):
        key = (category, dtype, name, phase)
        constants = device_constants.get(key)
        if constants is None:
            unit_peak = (peak_for(device, dtype, category)[0] or np.nan) if category != "memory" else 0.0
            constant, matrix, conv_steps = efficiency_source(eff, category, dtype, name)
            constants = device_constants[key] = (
                unit_peak,
                np.nan if constant is None else constant,
                curve_index(matrix),
                curve_index(conv_steps),
                overhead_for(eff, phase),
            )
        peak[j], eta[j], curve[j], conv[j], overhead[j] = constants
    return OpTable(
        f_fix=rec.values[:, 0],
        f_per=rec.values[:, 1],
        b_fix=rec.values[:, 2],
        b_per=rec.values[:, 3],
        calls=rec.calls,
        overhead=overhead,
        peak=peak,
        eta=eta,
        curve=curve.astype(int),
        conv=conv.astype(int),
        curves=curves,
        memory_curve=_curve(eff.memory),
        bandwidth=device.memory_bandwidth,
        sharded=rec.sharded,
        layout_free=rec.free,
        masks=rec.masks,
        dtypes=[r[2] for r in rec.rows],
    )


def record_times(table: OpTable, micro, tp, cp, sp) -> dict[str, np.ndarray]:
    """Per record and layout (arrays of shape layouts × records): seconds and their compute-bound,
    memory-bound and overhead parts, and FLOPs, for micro-batch `micro` under (tp, cp, sp) (1-D arrays)."""
    micro, tp, cp = (np.asarray(x, dtype=float)[:, None] for x in (micro, tp, cp))
    sp = np.asarray(sp, dtype=bool)[:, None]
    act = np.where(table.sharded, 1.0 / (tp * cp), 1.0 / (cp * np.where(sp, tp, 1.0)))
    weight = np.where(table.sharded, 1.0 / tp, 1.0)
    act = np.where(table.layout_free, 1.0, act)
    weight = np.where(table.layout_free, 1.0, weight)
    flops = table.f_fix * weight + table.f_per * micro * act
    nbytes = table.b_fix * weight + table.b_per * micro * act
    f_call, b_call = flops / table.calls, nbytes / table.calls
    t_mem = np.where(b_call > 0, b_call / (table.bandwidth * _at(table.memory_curve, b_call)), 0.0)
    eta = np.broadcast_to(table.eta, f_call.shape).copy()
    for k, curve in enumerate(table.curves):
        uses = table.curve == k
        if uses.any():
            eta[:, uses] = _at(curve, f_call[:, uses])
        convs = table.conv == k
        if convs.any():
            by_intensity = _at(curve, f_call[:, convs] / np.where(b_call[:, convs] > 0, b_call[:, convs], 1.0))
            eta[:, convs] = np.where(b_call[:, convs] > 0, by_intensity, eta[:, convs])
    computes = (f_call > 0) & (table.peak > 0)
    t_cmp = np.where(computes, f_call / np.where(computes, table.peak * eta, 1.0), 0.0)
    body = np.maximum(t_cmp, t_mem) * table.calls
    compute_bound = (t_cmp >= t_mem) & (t_cmp > 0)
    overhead = np.broadcast_to(table.overhead * table.calls, body.shape)
    return {
        "seconds": body + overhead,
        "compute_s": np.where(compute_bound, body, 0.0),
        "memory_s": np.where(compute_bound, 0.0, body),
        "overhead_s": overhead,
        "flops": flops,
    }


def pass_times(table: OpTable, micro, tp, cp, sp) -> dict[str, dict[tuple[str, str], np.ndarray]]:
    """Sums over the records of each region and phase (KEYS), per layout: {"seconds": {key: array}, ...}."""
    times = record_times(table, micro, tp, cp, sp)
    out = {}
    for what, values in times.items():
        sums = values @ table.masks
        out[what] = {key: sums[:, k] for k, key in enumerate(KEYS)}
    return out
