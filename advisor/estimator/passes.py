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

What the device really runs (roofline.profile_op_time, kernels.py, fused.py) is here too, as arrays: measured
curves of named ops, the optimizer's reuse distance, scatters' zeroing, GEMM caps by FLOPs per byte,
tensor-core eligibility, NCHW transposes and wave quantization of 16-bit convolutions and GEMMs, fused
recurrent layers in place of their decomposition, the optimizer's state creation left out, and on an
asynchronous device each pass taking the longer of its kernels and the host's issuing of its eager ops.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial, wraps

import numpy as np

from advisor.catalog.schema import Device, Efficiency, curve_points
from advisor.estimator import kernels
from advisor.estimator.fused import recurrent_modules, replaced_modules, rnn_times
from advisor.estimator.parallel.tensor import Roles
from advisor.estimator.roofline import (
    CONV_OPS,
    SCATTERS,
    STATE_INIT,
    OpTime,
    byte_scale,
    cuda_core_factor,
    effective_dtype,
    efficiency_source,
    gemm_factor,
    launch_for,
    loop_calls_s,
    optimizer_step_s,
    overhead_for,
    own_curve,
    peak_for,
    profile_op_time,
    reuse_cap,
    size_factor,
    step_bytes,
    within,
    writes_fresh,
)
from advisor.profiler.schema import Profile
from advisor.vocab import BLOCK_MATMUL_DTYPE, CPU_CAST

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
    sizes, values = curve_points(steps)
    return np.log(np.array(sizes)), np.log(np.array(values))


def _at(curve: tuple[np.ndarray, np.ndarray], size: np.ndarray) -> np.ndarray:
    """Efficiency.at over an array of sizes: log-log interpolation between the curve's points, flat outside."""
    log_sizes, log_values = curve
    return np.exp(np.interp(np.log(np.maximum(size, 1e-300)), log_sizes, log_values))


@dataclass
class OpTable:
    """Per-record constants of one profile on one device under one precision (arrays of length N)."""

    f_fix: np.ndarray
    f_per: np.ndarray
    b_fix: np.ndarray
    b_per: np.ndarray
    w_fix: np.ndarray  # the bytes written, fixed and per sample (a fresh output's: roofline.fresh_output_s)
    w_per: np.ndarray
    calls: np.ndarray
    overhead: np.ndarray  # per call
    peak: np.ndarray  # 0 where the op does no compute on a unit
    eta: np.ndarray  # constant η, nan where a curve decides
    curve: np.ndarray  # index into `curves` (-1: none)
    conv: np.ndarray  # index into `curves` of the convolution curve (-1: none)
    curves: list
    memory_curve: tuple
    handoff_curve: tuple | None  # Efficiency.handoff (None: not measured)
    in_turn_curve: tuple | None  # Efficiency.vector_in_turn (None: not measured)
    turned: np.ndarray  # records it applies to (roofline.in_turn_factor: fresh outputs, not matrix or optimizer ops)
    fresh_curve: tuple | None  # Efficiency.fresh_output, by the step's bytes, for the same records (None: not measured)
    bandwidth: float
    sharded: np.ndarray
    layout_free: np.ndarray  # optimizer records: evaluated at the whole model
    masks: np.ndarray  # N × len(KEYS): which sum each record adds to
    dtypes: list[str]
    cap: np.ndarray  # index into `curves` of a GEMM's cap by FLOPs per byte (-1: none)
    scale: np.ndarray  # of the size curve (convolutions without an intensity curve)
    size_scale: np.ndarray  # FLOPs multiplier of the size-curve lookup (roofline.size_factor)
    op_curve: np.ndarray  # index into `curves` of the op's own measured curve by bytes per call (-1: none)
    curve_scale: np.ndarray  # multiplies a memory-bound time, own curve or memory curve (kernels.curve_factor)
    min_s: np.ndarray  # least body time of one call
    setup_s: np.ndarray  # time every call adds to its body (Efficiency.op_setup_s)
    window: np.ndarray  # N × 2: a pooling op's (FLOPs per byte of its curve, seconds per FLOP beyond), 0: none
    live: np.ndarray  # 0 for records a steady-state step on this device does not run
    reuse: np.ndarray  # optimizer records (data last touched a whole step ago): how far the step's traffic is
    # looked up (roofline.reuse_cap); 0: not an optimizer record
    hot: np.ndarray  # GEMMs of a recurrent layer run step by step: their weights come from the cache
    step_bytes: tuple[float, float]  # bytes of one step: fixed, per sample
    s_fix: np.ndarray  # serial bytes (separate kernels: a scatter's zeroed table), fixed and per sample
    s_per: np.ndarray
    sort_idx: np.ndarray  # indices per sample an embedding gradient sorts (kernels.sorted_indices), 0: none
    sort_max: np.ndarray  # indices per call up to which it does not (kernels.sort_threshold)
    sort_bytes: float  # bytes per sorted index (Efficiency.index_sort)
    sort_launch_s: float  # device seconds per call of the sort's kernels
    transpose: np.ndarray  # bytes of NCHW transposes and padded channel copies at the profile's batch (all calls)
    pad: np.ndarray  # share of a padded convolution's tensor-core lanes that do real work (1: no padding)
    f_profile: np.ndarray  # FLOPs at the profile's batch
    wave: np.ndarray  # N × 3: (n, k, batches) of a tensor-core GEMM or convolution for wave quantization, 0: none
    split_k: np.ndarray  # GEMMs (not convolutions): the library may split a long reduction over idle slots
    slots: float  # tile slots of the device (sm_count × tiles per SM), 0: no wave quantization
    flops_cap: np.ndarray  # FLOP/s a GEMM on the library's unaligned kernels reaches at most (0: no limit)
    gather: np.ndarray  # N × 2: row-gather blocks over all calls, fixed and per sample (0: none)
    block_s: float  # device seconds per row-gather block (kernels.block_seconds)
    copies: np.ndarray  # bytes per sample of copying a non-contiguous input first, or of a CPU linear layer's bias
    # passes (kernels.bias_bytes); 0: none
    reorder: np.ndarray  # N × 2 × 3: a CPU convolution's layout reorders (kernels.reorder_passes): per pass kind, bytes
    # of one pass at the profile's batch, passes per call, padded channels (1) or not; zeros: none
    reorder_curves: tuple | None  # the family's reorder curves (aligned, padded), None: not measured
    native: np.ndarray  # samples a call per sample of the micro-batch of a 1x1 convolution PyTorch runs on its native
    # kernel below kernels.NATIVE_CONV_BATCH samples a call (kernels.native_conv; its GEMMs come in `extra`); 0: none
    blocks: np.ndarray  # N × 3: batch norm on one block per channel (kernels.channel_block_s): elements per sample
    # and call, bytes per element of a channel's tensors, seconds per element (waves over a block's rate); 0: none
    channel_bytes_max: float  # a channel's bytes up to which batch norm runs at the memory rate instead
    tile: tuple[int, int]
    host_op_s: float  # the host's time per eager op on an asynchronous device (0: overheads add)
    host_phase_s: dict  # the same by phase, where measured (a calibrated GPU)
    host_calls: np.ndarray  # eager ops each record's calls issue
    extra: list  # (key, micro-batch -> OpTime list) of work no record holds (fused recurrent layers)
    module_s: float  # the forward pass's nn.Module call overhead, added to `module_key`
    module_key: tuple[str, str]


@dataclass
class _Records:
    """The device-independent part of an op table: one profile under one precision."""

    rows: list[tuple]  # (record index, category, dtype, op name, phase)
    values: np.ndarray  # N × 6: flops fixed, flops per sample, bytes fixed, bytes per sample, and the bytes written
    calls: np.ndarray
    sharded: np.ndarray
    free: np.ndarray
    masks: np.ndarray


def _memo(limit: int):
    """Memoize a function of objects (by identity) and strings: a search builds the same parts for many devices.
    The entries hold their arguments, so an id is never reused while it is a key; past `limit` entries (a
    long-lived process with many profiles) the old ones are forgotten."""

    def wrap(make):
        store: dict = {}

        @wraps(make)
        def cached(*args):
            key = tuple(a if isinstance(a, str) else id(a) for a in args)
            hit = store.get(key)
            if hit is not None and all(x is y for x, y in zip(hit[0], args, strict=True)):
                return hit[1]
            value = make(*args)
            if len(store) >= limit:
                store.clear()
            store[key] = (args, value)
            return value

        return cached

    return wrap


@_memo(64)
def _records(profile: Profile, roles: Roles, precision: str) -> _Records:
    fp8 = BLOCK_MATMUL_DTYPE.get(precision)
    rows: list[tuple] = []
    values: list[tuple] = []
    for i, op in enumerate(profile.ops):
        dtype = effective_dtype(op.dtype, op.category, profile.precision, precision, op.phase)
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
                op.bytes_written.fixed * scale,
                op.bytes_written.per_sample * scale,
            )
        )
        if fp8 and roles.block_matmul[i]:
            cast = (op.bytes_read.per_sample + op.bytes_written.per_sample) * byte_scale(op.dtype, "bf16")
            rows.append((i, "memory", "bf16", "fp8.cast", op.phase))
            values.append((0.0, 0.0, 0.0, FP8_CAST_SHARE * cast, 0.0, FP8_CAST_SHARE * cast / 2))
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
    return _Records(rows, np.asarray(values, dtype=float).reshape(n, 6), calls, sharded, free, masks)


@dataclass
class _EffPart:
    """What an op table takes from the device's efficiency family, not from the device: one profile under one
    precision and one `Efficiency` (devices of a family share it, so a search computes it once)."""

    units: list[tuple[str, str] | None]  # per record: the (dtype, unit) whose peak it runs at, None: no unit
    eta: np.ndarray
    curve: np.ndarray
    conv: np.ndarray
    overhead: np.ndarray
    cap: np.ndarray
    scale: np.ndarray
    op_curve: np.ndarray
    curve_scale: np.ndarray
    min_s: np.ndarray
    setup_s: np.ndarray
    window: np.ndarray
    curves: list
    live: np.ndarray
    reuse: np.ndarray
    hot: np.ndarray
    values: np.ndarray
    s_fix: np.ndarray
    s_per: np.ndarray
    sort_idx: np.ndarray
    sort_max: np.ndarray
    transpose: np.ndarray
    pad: np.ndarray
    f_profile: np.ndarray
    wave: np.ndarray
    unaligned: np.ndarray
    blocks: np.ndarray
    gather: np.ndarray  # N × 2: row-gather blocks over all calls, fixed and per sample (kernels.gather_blocks_per_byte)
    copies: np.ndarray  # bytes per sample of separate passes (kernels.strided_copy_bytes, kernels.bias_bytes)
    reorder: np.ndarray  # N × 2 × 3: kernels.reorder_passes per record (see OpTable.reorder)
    host_calls: np.ndarray
    fused: set
    step_bytes: tuple[float, float]


@_memo(256)
def _eff_part(profile: Profile, rec: _Records, eff: Efficiency, cpu: bool = False) -> _EffPart:
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
    eta, curve, conv, overhead, cap, scale, op_curve, min_s, setup_s = (np.zeros(n) for _ in range(9))
    window = np.zeros((n, 2))
    units: list[tuple[str, str] | None] = [None] * n
    family_constants: dict[tuple, tuple] = {}  # the few distinct (category, dtype, op, phase, variant) of a profile
    for j, (i, category, dtype, name, phase) in enumerate(rec.rows):
        variant = kernels.kernel_variant(profile.ops[i], eff)
        key = (category, dtype, name, phase, variant)
        constants = family_constants.get(key)
        if constants is None:
            own = own_curve(eff, name)
            constant, matrix, conv_steps, cap_steps, factor = efficiency_source(eff, category, dtype, name, variant)
            constants = family_constants[key] = (
                None if category == "memory" else (dtype, "vector" if own else category),
                np.nan if constant is None else constant,
                curve_index(matrix),
                curve_index(conv_steps),
                overhead_for(eff, phase),
                curve_index(cap_steps),
                factor,
                curve_index(own),
                eff.min_op_s.get(name, 0.0) if name else 0.0,
                eff.op_setup_s.get(name, 0.0) if name else 0.0,
                (w.flops_per_byte, w.seconds_per_flop) if own and (w := eff.op_window.get(name)) else (0.0, 0.0),
            )
        (units[j], eta[j], curve[j], conv[j], overhead[j], cap[j], scale[j], op_curve[j], min_s[j], setup_s[j],
         window[j]) = constants  # fmt: skip
    # what this family of devices runs of each record
    fused = replaced_modules(profile, eff, cpu)
    stepped = recurrent_modules(profile, eff, cpu)
    hot = np.fromiter(
        (c == "matrix" and n == profile.ops[i].op and within(profile.ops[i].module, stepped)
         for i, c, _d, n, _p in rec.rows), dtype=bool, count=len(rec.rows),
    )  # fmt: skip
    live, reuse = np.ones(n), np.zeros(n)
    s_fix, s_per, transpose, f_profile, sort_idx, sort_max = (np.zeros(n) for _ in range(6))
    pad = np.ones(n)
    wave = np.zeros((n, 3))
    unaligned = np.zeros(n, dtype=bool)
    blocks = np.zeros((n, 4))  # kernels.channel_blocks: spatial elements, channels, bytes per element, rate
    gather = np.zeros((n, 2))
    copies = np.zeros(n)
    reorder = np.zeros((n, 2, 3))
    curve_scale = np.ones(n)
    norms = eff.batch_norm_nchw if eff.batch_norm_nchw is not None and not kernels.channels_last(profile) else None
    host_calls = np.array([float(profile.ops[r[0]].count) for r in rec.rows])
    batch = profile.batch_size
    kernel_data = eff.tensor_core_channels or eff.gemm_tile or eff.nchw_transpose or eff.conv_channel_block
    loop_s = eff.loop_op_s
    for j, (i, category, dtype, name, phase) in enumerate(rec.rows):
        op = profile.ops[i]
        if name != op.op:
            continue  # an fp8 cast row: plain memory traffic
        scale_b = byte_scale(op.dtype, dtype) if dtype != op.dtype else 1.0  # the record's bytes in `dtype`
        curve_scale[j] = kernels.curve_factor(op, eff)
        copies[j] = (
            kernels.strided_copy_bytes(op, dtype, batch, eff)
            + kernels.bias_bytes(op, eff, scale_b)
            + kernels.output_bytes(op, eff, scale_b)
        )
        if loop_s is not None and phase == "forward" and stepped and within(op.module, stepped):
            overhead[j] = loop_s  # issued from a recurrent layer's C++ loop (Efficiency.loop_op_s)
        if norms is not None:
            blocks[j] = kernels.channel_blocks(op, norms, dtype) or (0, 0, 0, 0)
        per_byte = kernels.gather_blocks_per_byte(op, eff.row_gather, dtype) * scale_b
        gather[j] = op.bytes_written.fixed * per_byte, op.bytes_written.per_sample * per_byte
        if not cpu and op.layout == CPU_CAST:  # a CPU kernel's dtype conversion: other devices cast as they load
            live[j], host_calls[j] = 0.0, 0.0
            continue
        if not fused and phase != "optimizer" and op.op not in SCATTERS and not (category == "matrix" and kernel_data):
            continue
        if within(op.module, fused) or (phase == "optimizer" and op.op in STATE_INIT):
            live[j], host_calls[j] = 0.0, 0.0
            continue
        reuse[j] = reuse_cap(eff, op.op) if phase == "optimizer" else 0.0
        if op.op in SCATTERS and op.op in eff.op_curves:
            s_fix[j], s_per[j] = op.bytes_written.fixed * scale_b, op.bytes_written.per_sample * scale_b
        sort_idx[j] = kernels.sorted_indices(op, eff.index_sort, batch)
        sort_max[j] = kernels.sort_threshold(op, eff.index_sort)
        if category == "matrix" and kernel_data:
            tensor = dtype not in kernels.TENSOR_CORE_DTYPES or kernels.tensor_cores(op, eff, dtype)
            if not tensor:
                units[j] = (dtype, "vector")
            else:
                wave[j] = kernels.wave_dims(op) or (0, 0, 0)
                unaligned[j] = kernels.gemm_unaligned(op, eff, dtype)
            pad[j], pad_bytes = kernels.channel_padding(op, eff, dtype)
            transpose[j] = kernels.transpose_bytes(op, eff, dtype, 1.0) + pad_bytes
            f_profile[j] = op.flops.at(batch)
            for k, one in enumerate(kernels.reorder_passes(op, eff, dtype, batch)):
                reorder[j, k] = one
    # serial bytes come out of the record's own traffic
    values = rec.values.copy()
    values[:, 2] -= s_fix
    values[:, 3] -= s_per
    return _EffPart(
        units, eta, curve, conv, overhead, cap, scale, op_curve, curve_scale, min_s, setup_s, window, curves, live,
        reuse, hot,
        values,
        s_fix, s_per, sort_idx, sort_max, transpose, pad, f_profile, wave, unaligned, blocks, gather, copies,
        reorder, host_calls, fused,
        (
            sum(o.bytes_read.fixed + o.bytes_written.fixed for o in profile.ops),
            sum(o.bytes_read.per_sample + o.bytes_written.per_sample for o in profile.ops),
        ),
    )  # fmt: skip


def op_table(profile: Profile, roles: Roles, device: Device, eff: Efficiency, precision: str) -> OpTable:
    rec = _records(profile, roles, precision)
    part = _eff_part(profile, rec, eff, device.kind == "cpu")
    n = len(rec.rows)
    runs_on = {unit: peak_for(device, *unit) for unit in set(part.units) if unit is not None}
    peaks = {unit: peak or np.nan for unit, (peak, _) in runs_on.items()}
    factors = {unit: size_factor(device, eff, unit[0], peaks[unit]) for unit in peaks}
    tensor = gemm_factor(device, eff)  # the device's tensor cores against its family's curves
    peaks = {unit: peaks[unit] * tensor if where == "matrix" else peaks[unit] for unit, (_, where) in runs_on.items()}
    cores = {unit: cuda_core_factor(device, eff, unit[0], where) for unit, (_, where) in runs_on.items()}
    gemm = np.array([r[3] not in CONV_OPS for r in rec.rows], dtype=bool)  # convolutions neither rescale nor split
    peak = np.array(
        [
            0.0 if u is None else peaks[u] * (cores[u] if g and r[1] == "matrix" else 1.0)
            for u, r, g in zip(part.units, rec.rows, gemm, strict=True)
        ]
    )
    size_scale = np.array(
        [
            factors[u] if u is not None and r[1] == "matrix" and g else 1.0
            for u, r, g in zip(part.units, rec.rows, gemm, strict=True)
        ]
    )
    extra = []
    for rnn in profile.rnns:
        if rnn.module not in part.fused:
            continue
        where = next((region_of(rec, j) for j in range(n) if profile.ops[rec.rows[j][0]].module == rnn.module
                      or profile.ops[rec.rows[j][0]].module.startswith(rnn.module + ".")), "before")  # fmt: skip
        extra.append((where, partial(rnn_times, rnn, device, eff, precision)))
    faults = profile.memory.step_fault_bytes
    if device.kind == "cpu" and eff.first_touch_bandwidth and faults is not None:
        shares = profile.memory.step_fault_shares or {"backward": 1.0}
        extra.append(("before", partial(fault_times, faults, shares, eff.first_touch_bandwidth)))
    if device.kind == "cpu" and eff.optimizer_step:
        extra.append(("before", partial(optimizer_step_times, profile, eff)))
    native = np.zeros(n)
    for j, (i, _category, dtype, name, _phase) in enumerate(rec.rows):
        op = profile.ops[i]
        found = kernels.native_conv(op, eff, dtype, profile.batch_size) if name == op.op else None
        if found is not None and part.live[j]:
            native[j] = found[3] / profile.batch_size
            extra.append((region_of(rec, j), partial(native_conv_times, op, profile, device, eff, precision)))
    module_s = 0.0
    if eff.module_overhead_s and profile.module_calls:
        module_s = eff.module_overhead_s * profile.module_calls
    if eff.loop_call_s and profile.rnns:  # the layers run step by step: their calls' Python
        module_s += loop_calls_s(profile, eff, recurrent_modules(profile, eff, device.kind == "cpu"))
    has_blocks = bool(rec.masks[:, KEYS.index(("block", "forward"))].any())
    slots = float(device.sm_count * max(1, eff.tiles_per_sm or 1)) if eff.gemm_tile and device.sm_count else 0.0
    return OpTable(
        f_fix=part.values[:, 0],
        f_per=part.values[:, 1],
        b_fix=part.values[:, 2],
        b_per=part.values[:, 3],
        w_fix=part.values[:, 4],
        w_per=part.values[:, 5],
        calls=rec.calls,
        overhead=part.overhead,
        peak=peak,
        eta=part.eta,
        curve=part.curve.astype(int),
        conv=part.conv.astype(int),
        curves=part.curves,
        memory_curve=_curve(eff.memory),
        handoff_curve=_curve(eff.handoff) if eff.handoff else None,
        in_turn_curve=_curve(eff.vector_in_turn) if eff.vector_in_turn else None,
        fresh_curve=_curve(eff.fresh_output) if eff.fresh_output else None,
        turned=np.array([writes_fresh(category, phase, name) for _, category, _, name, phase in rec.rows], dtype=bool),
        bandwidth=device.memory_bandwidth,
        sharded=rec.sharded,
        layout_free=rec.free,
        masks=rec.masks,
        dtypes=[r[2] for r in rec.rows],
        cap=part.cap.astype(int),
        scale=part.scale,
        size_scale=size_scale,
        op_curve=part.op_curve.astype(int),
        curve_scale=part.curve_scale,
        min_s=part.min_s,
        setup_s=part.setup_s,
        window=part.window,
        live=part.live,
        reuse=part.reuse,
        hot=part.hot,
        step_bytes=part.step_bytes,
        s_fix=part.s_fix,
        s_per=part.s_per,
        sort_idx=part.sort_idx,
        sort_max=part.sort_max,
        sort_bytes=eff.index_sort.bytes_per_index if eff.index_sort is not None else 0.0,
        sort_launch_s=eff.index_sort.kernels * launch_for(eff) if eff.index_sort is not None else 0.0,
        transpose=part.transpose,
        pad=part.pad,
        f_profile=part.f_profile,
        wave=part.wave,
        split_k=gemm,
        slots=slots,
        flops_cap=np.where(part.unaligned, kernels.unaligned_cap(device, eff), 0.0),
        native=native,
        blocks=_blocks(part.blocks, device, eff),
        gather=part.gather,
        copies=part.copies,
        reorder=part.reorder,
        reorder_curves=_reorder_curves(eff),
        block_s=kernels.block_seconds(device, eff.row_gather),
        channel_bytes_max=eff.batch_norm_nchw.channel_bytes_max if eff.batch_norm_nchw is not None else 0.0,
        tile=tuple(eff.gemm_tile) if eff.gemm_tile else (1, 1),
        host_op_s=eff.host_op_s or 0.0,
        host_phase_s=dict(eff.host_phase_s),
        host_calls=part.host_calls,
        extra=extra,
        module_s=module_s,
        module_key=("block" if has_blocks else "before", "forward"),
    )


def _reorder_curves(eff: Efficiency) -> tuple | None:
    """(aligned, padded) reorder curves as arrays, either standing in for the other where one is missing."""
    if not eff.conv_reorder:
        return None
    return _curve(kernels.reorder_curve(eff.conv_reorder, False)), _curve(kernels.reorder_curve(eff.conv_reorder, True))


def _blocks(blocks: np.ndarray, device: Device, eff: Efficiency) -> np.ndarray:
    """OpTable.blocks from kernels.channel_blocks' figures of each record on `device` (zeros where none apply)."""
    out = np.zeros((len(blocks), 3))
    if not blocks.any() or not (device.sm_count and device.boost_clock):
        return out
    spatial, channels, width, rate = blocks.T
    waves = np.maximum(1.0, channels / (device.sm_count * eff.batch_norm_nchw.blocks_per_sm))
    has = rate > 0
    out[:, 0], out[:, 1] = spatial, width
    out[:, 2] = np.where(has, waves / np.where(has, rate, 1.0) / device.boost_clock, 0.0)
    return out


def region_of(rec: _Records, j: int) -> str:
    """The region (before|block|after) a record's sums go to."""
    for k, key in enumerate(KEYS):
        if rec.masks[j, k] and key[0] in REGIONS:
            return key[0]
    return "before"


def fault_times(faults, shares: dict[str, float], bandwidth: float, batch: float) -> dict[str, list[OpTime]]:
    """The pages a CPU step faults in (`Memory.step_fault_bytes` at micro-batch `batch`) at the OS's first-touch
    rate, one memory-bound item per phase by the profile's `shares` (a profile without them: all in the backward
    pass, where the gradients are first written). Counted per micro-batch: with gradient accumulation the
    gradients stay allocated between micro-batches, so this overstates what the later ones fault."""
    total = max(0.0, faults.at(batch))
    out: dict[str, list[OpTime]] = {"forward": [], "backward": [], "optimizer": []}
    for phase, share in shares.items():
        t = total * share / bandwidth
        out[phase].append(OpTime(t, 0.0, t, 0.0, 0.0, total * share, "memory", "fp32"))
    return out


def optimizer_step_times(profile: Profile, eff: Efficiency, batch: float) -> dict[str, list[OpTime]]:
    """The optimizer phase's fixed cost per step on a CPU (`roofline.optimizer_step_s` at the step's bytes at
    micro-batch `batch`, over the optimizer's data: the gradients, the parameters they update and the state; the
    whole model's, as a CPU runs it unsharded)."""
    mem = profile.memory
    t = optimizer_step_s(eff, profile.bytes(batch), 2 * mem.gradient_bytes + mem.optimizer_state_bytes)
    return {"optimizer": [OpTime(t, 0.0, 0.0, t, 0.0, 0.0, "memory", "fp32")]}


def native_conv_times(op, profile: Profile, device: Device, eff: Efficiency, precision: str, batch: float):
    """{phase: [OpTime]} of a `kernels.native_conv` record at micro-batch `batch` where PyTorch runs it on its native
    kernel there (roofline.profile_op_time: its per-sample GEMMs), else {} (the record's own row holds it). The
    record's row counts its eager op calls, so these count none."""
    from dataclasses import replace

    dtype = effective_dtype(op.dtype, op.category, profile.precision, precision, op.phase)
    if not kernels.native_gemms(op, eff, dtype, batch, profile.batch_size):
        return {}
    t = profile_op_time(op, device, eff, profile.precision, precision, batch, step_bytes(profile, batch),
                        profile.batch_size)  # fmt: skip
    return {op.phase: [replace(t, host_calls=0.0)]}


def unaligned_time(table: OpTable, micro: float, tp: int, cp: int, sp: bool) -> tuple[float, int]:
    """(seconds one micro-batch spends in 16-bit GEMMs at the unaligned kernels' limit, the record with the most
    of them; -1 when there is none): what padding their odd dimension to a multiple of 8 would buy back."""
    capped = table.flops_cap > 0
    if not capped.any():
        return 0.0, -1
    flops = record_times(table, [micro], [tp], [cp], [sp])["flops"][0]
    seconds = np.where(capped, flops / np.where(capped, table.flops_cap, 1.0), 0.0)
    return float(seconds.sum()), int(np.argmax(seconds))


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
    # memory efficiency by the bytes of a call, or for the optimizer by the whole step's (capped) traffic
    footprint = table.step_bytes[0] + table.step_bytes[1] * micro  # the bytes of the step at this micro-batch
    moved = np.minimum(footprint, table.reuse)
    b_look = np.where(table.reuse > 0, np.maximum(b_call, moved), b_call)
    # on a many-thread CPU a step's memory-bound calls read what another op's threads wrote (roofline.handoff_factor)
    handoff = _at(table.handoff_curve, b_look) if table.handoff_curve is not None else np.ones_like(b_look)
    # and their fresh outputs written run in turn with the step's other ops (roofline.in_turn_factor), at a cost added
    stream = np.where(b_call > 0, b_call / (table.bandwidth * _at(table.memory_curve, b_look)), 0.0)
    turn_s = np.zeros_like(b_look)
    if table.in_turn_curve is not None:
        turn = np.where(table.turned, _at(table.in_turn_curve, b_look), 1.0)
        turn_s = np.where(turn < 1.0, stream * (1.0 / turn - 1.0), 0.0)
    # an op with its own curve pays the handoff likewise, its bytes at the streaming rate (roofline.stream_extra_s)
    own_s = np.where(table.op_curve >= 0, stream * (1.0 / handoff - 1.0), 0.0)
    t_mem = stream / handoff
    t_mem = t_mem * table.curve_scale  # a copy between layouts (own curves rescale theirs below)
    eta = np.broadcast_to(table.eta, f_call.shape).copy()
    intensity = f_call / np.where(b_call > 0, b_call, 1.0)
    # the cap by FLOPs per byte: a recurrent step's weights come from the cache, only its per-sample bytes count
    b_cap = np.where(table.hot, table.b_per * micro * act / table.calls, b_call) if table.hot.any() else b_call
    i_cap = f_call / np.where(b_cap > 0, b_cap, 1.0)
    for k, curve in enumerate(table.curves):
        uses = table.curve == k
        if uses.any():
            eta[:, uses] = _at(curve, f_call[:, uses] * table.size_scale[uses]) * table.scale[uses]
    for k, curve in enumerate(table.curves):
        convs = table.conv == k
        if convs.any():
            by_size = eta[:, convs] / table.scale[convs]
            eta[:, convs] = np.where(b_call[:, convs] > 0, _at(curve, intensity[:, convs]), by_size)
        caps = table.cap == k
        if caps.any():
            eta[:, caps] = np.where(b_cap[:, caps] > 0, np.minimum(eta[:, caps], _at(curve, i_cap[:, caps])),
                                    eta[:, caps])  # fmt: skip
    no_bytes = (b_call <= 0) & (table.scale != 1.0)
    if no_bytes.any():
        eta = np.where(no_bytes, eta / table.scale, eta)
    eta = eta * _wave(table, f_call) * table.pad
    for k, curve in enumerate(table.curves):
        own = table.op_curve == k
        if own.any():  # a measured op: its own roofline over the efficiency measured at this size
            eta_own = _at(curve, b_look[:, own]) / table.curve_scale[own]
            eta[:, own] = eta_own
            t_mem[:, own] = np.where(b_call[:, own] > 0, b_call[:, own] / (table.bandwidth * eta_own), 0.0)
    computes = (f_call > 0) & (table.peak > 0)
    t_cmp = np.where(computes, f_call / np.where(computes, table.peak * eta, 1.0), 0.0)
    capped = computes & (table.flops_cap > 0)
    if capped.any():  # a 16-bit GEMM off the 16-byte grid: the library's element-wise loading kernels
        t_cmp = np.where(capped, np.maximum(t_cmp, f_call / np.where(capped, table.flops_cap, 1.0)), t_cmp)
    body = np.maximum(np.maximum(t_cmp, t_mem), table.min_s)
    if table.blocks.any():  # batch norm on one block per channel, where a channel's data outgrows one SM
        elements = table.blocks[:, 0] * micro * act
        floor = np.where(elements * table.blocks[:, 1] > table.channel_bytes_max, elements * table.blocks[:, 2], 0.0)
        body = np.maximum(body, floor)
    if table.block_s and table.gather.any():  # an embedding lookup: one thread block per row
        rows = (table.gather[:, 0] * weight + table.gather[:, 1] * micro * act) / table.calls
        body = np.maximum(body, rows * table.block_s)
    body = body + table.setup_s  # a library call's fixed cost (a CPU convolution's), whatever its size
    body = body + turn_s + own_s  # where the data is (roofline.stream_extra_s), whatever the op's own rate
    if table.window.any():  # pooling windows wider or denser than the ones their curves were measured on
        body = body + table.window[:, 1] * np.maximum(f_call - table.window[:, 0] * b_call, 0.0)
    serial = table.s_fix * weight + table.s_per * micro * act
    if table.copies.any():
        serial = serial + table.copies * micro * act
    sorts = None
    if table.sort_idx.any():  # an embedding gradient's index sort, where its calls are past the unsorted kernel
        indices = table.sort_idx * micro * act
        sorts = indices / table.calls > table.sort_max
        serial = serial + np.where(sorts, indices * table.sort_bytes, 0.0)
    if table.transpose.any():
        growth = flops / np.where(table.f_profile > 0, table.f_profile, 1.0)
        serial = serial + table.transpose * growth
    s_call = serial / table.calls
    t_serial = np.where(s_call > 0, s_call / (table.bandwidth * _at(table.memory_curve, s_call)), 0.0) * table.calls
    if table.reorder_curves is not None and table.reorder[:, :, 1].any():  # a CPU convolution's layout reorders
        growth = flops / np.where(table.f_profile > 0, table.f_profile, 1.0)
        aligned, padded = table.reorder_curves
        for k in range(table.reorder.shape[1]):
            size, count, pads = table.reorder[:, k, 0] * growth, table.reorder[:, k, 1], table.reorder[:, k, 2] > 0
            rate = table.bandwidth * np.where(pads, _at(padded, size), _at(aligned, size))
            t_serial = t_serial + np.where(count > 0, count * size / rate, 0.0) * table.calls
    if table.fresh_curve is not None:  # no call writes its fresh output faster than the step's ops do in turn
        w_call = (table.w_fix * weight + table.w_per * micro * act) / table.calls
        rate = table.bandwidth * _at(table.fresh_curve, footprint)
        fresh = np.where(table.turned & (w_call > 0), w_call / rate, 0.0)
        body = np.maximum(body, fresh - t_serial / table.calls)
    compute_bound = (t_cmp >= t_mem) & (t_cmp > 0)
    live = table.live
    if table.native.any():  # below the native kernel's batch the record's GEMMs (OpTable.extra) stand in for it
        live = live * ((table.native == 0) | (table.native * micro >= kernels.NATIVE_CONV_BATCH))
    body = body * table.calls * live
    t_serial = t_serial * live
    overhead = np.broadcast_to(table.overhead * table.calls * live, body.shape)
    if sorts is not None:
        overhead = overhead + np.where(sorts, table.sort_launch_s * table.calls * table.live, 0.0)
    return {
        "seconds": body + t_serial + overhead,
        "compute_s": np.where(compute_bound, body, 0.0),
        "memory_s": np.where(compute_bound, 0.0, body) + t_serial,
        "overhead_s": overhead,
        "flops": flops * live,
    }


def _wave(table: OpTable, f_call: np.ndarray) -> np.ndarray:
    """kernels.wave_efficiency over the records that have wave dimensions (1 elsewhere)."""
    if not table.slots or not table.wave.any():
        return 1.0
    n, k, batches = table.wave[:, 0], table.wave[:, 1], table.wave[:, 2]
    has = n > 0
    safe = np.where(has, 2.0 * batches * n * k, 1.0)
    m = np.maximum(1.0, np.round(f_call / safe))
    share = kernels.wave_share(
        m, np.where(has, n, 1.0), k, np.where(has, batches, 1.0), table.tile, table.slots, table.split_k
    )
    return np.where(has & (f_call > 0), share, 1.0)


def pass_times(table: OpTable, micro, tp, cp, sp) -> dict[str, dict[tuple[str, str], np.ndarray]]:
    """Sums over the records of each region and phase (KEYS), per layout: {"seconds": {key: array}, ...};
    with what no record holds (fused recurrent layers, module calls) and the host's issuing rate applied."""
    times = record_times(table, micro, tp, cp, sp)
    out = {}
    for what, values in times.items():
        sums = values @ table.masks
        out[what] = {key: sums[:, k] for k, key in enumerate(KEYS)}
    micro = np.asarray(micro, dtype=float)
    calls = {key: np.full(micro.shape, float(table.host_calls @ table.masks[:, k])) for k, key in enumerate(KEYS)}
    if table.extra:
        values = np.unique(micro)
        for region, times_at in table.extra:
            by_micro = {float(v): times_at(float(v)) for v in values}
            for phase in ("forward", "backward", "optimizer"):
                key = ("optimizer", "optimizer") if phase == "optimizer" else (region, phase)
                for what, field in (("seconds", "seconds"), ("compute_s", "compute_s"), ("memory_s", "memory_s"),
                                    ("overhead_s", "overhead_s"), ("flops", "flops")):  # fmt: skip
                    add = np.array([sum(getattr(t, field) for t in by_micro[float(v)].get(phase, [])) for v in micro])
                    out[what][key] = out[what][key] + add
                issued = [sum(t.host_calls for t in by_micro[float(v)].get(phase, [])) for v in micro]
                calls[key] = calls[key] + np.array(issued)
    if table.module_s and not table.host_op_s:
        for what in ("seconds", "overhead_s"):
            out[what][table.module_key] = out[what][table.module_key] + table.module_s
    if table.host_op_s:
        # each pass takes the longer of its kernels and the host's issuing of its eager ops; the host's excess
        # over a phase is spread over its regions by the ops each issues
        for keys in (
            [(r, "forward") for r in REGIONS],
            [(r, "backward") for r in REGIONS],
            [("optimizer", "optimizer")],
        ):
            host = {
                k: calls[k] * table.host_phase_s.get(k[1], table.host_op_s)
                + (table.module_s if k == table.module_key else 0.0)
                for k in keys
            }
            total_host = sum(host.values())
            excess = np.maximum(total_host - sum(out["seconds"][k] for k in keys), 0.0)
            for k in keys:
                add = excess * host[k] / np.where(total_host > 0, total_host, 1.0)
                out["seconds"][k] = out["seconds"][k] + add
                out["overhead_s"][k] = out["overhead_s"][k] + add
    return out
