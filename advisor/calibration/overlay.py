"""Measurements -> a catalog overlay (one device and its efficiency profile), and where it is written.

The device's peaks are the best rates measured (the largest matmul per dtype, the fastest elementwise add),
and the efficiency curves are each measurement as a fraction of those peaks, so the estimator's roofline
reproduces the measured times op by op. A fraction is at most 1, but a dense convolution's: its kernels may beat the
best square GEMM the matrix peak is. The fixed costs of an op and of a module call come from timing tiny
training steps (see `advisor.calibration.fit`).
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import os
import platform
import re
import statistics
from pathlib import Path

from advisor.calibration.bench import FRESH_ELEMENTS, Measurements, Point
from advisor.calibration.fit import COLD_LARGE, COLD_SIZE, optimizer_data_bytes
from advisor.calibration.kernels import MAX_IN_TURN
from advisor.calibration.ops import SCATTERS
from advisor.catalog.schema import CONV_EFFICIENCY_MAX, Efficiency, Step

MIN_EFFICIENCY = 0.001
PEAK_MIN_BYTES = 1 << 18  # memory peak from calls moving at least this much


def user_catalog_dir() -> Path:
    """Where advisor looks for the user's own catalog files: $XDG_CONFIG_HOME/advisor/catalog."""
    from advisor.catalog.load import user_dir

    return user_dir()


def device_id(m: Measurements) -> str:
    """local-cpu for the CPU, local-<gpu name> for a GPU (e.g. local-nvidia-h100-80gb-hbm3)."""
    if m.device == "cpu":
        return "local-cpu"
    slug = re.sub(r"[^a-z0-9]+", "-", m.name.lower()).strip("-")
    return f"local-{slug}"[:80]


def default_path(m: Measurements) -> Path:
    return user_catalog_dir() / f"{device_id(m)}.yaml"


def monotone(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The closest non-decreasing sequence (pool adjacent violators) to `points` sorted by size: efficiency
    rises with arithmetic intensity, and single noisy measurements should not make a curve zig-zag."""
    blocks: list[list[float]] = []  # [sum, count, first size]
    for size, eff in sorted(points):
        blocks.append([eff, 1, size])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c, _ = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    out, sizes = [], sorted(p[0] for p in points)
    i = 0
    for s, c, _ in blocks:
        for _ in range(int(c)):
            out.append((sizes[i], s / c))
            i += 1
    return out


def clustered(points: list[tuple[float, float]], ratio: float = 1.25) -> list[tuple[float, float]]:
    """`points` (size, efficiency) with sizes within `ratio` of the cluster's first pooled: their geometric mean
    size and mean efficiency. A curve that need not rise (depthwise convolutions) keeps its real turns but no zig-zag
    between layers of one kind (three 3x3 layers at 2.24-2.25 FLOPs per byte)."""
    out: list[list[float]] = []  # [first size, sum of log sizes, sum of efficiencies, count]
    for size, eff in sorted(points):
        if out and size <= out[-1][0] * ratio:
            out[-1][1:] = [out[-1][1] + math.log(size), out[-1][2] + eff, out[-1][3] + 1]
        else:
            out.append([size, math.log(size), eff, 1])
    return [(math.exp(logs / n), effs / n) for _, logs, effs, n in out]


def handoff_curve(matched: list[Point], cross: list[Point]) -> list[dict] | None:
    """The catalog's `handoff` steps from bench.handoff_points: by bytes per call, the add's time with its input
    written at its own thread count over its time with that input written by one thread (at most 1). None
    without measurements."""
    pairs = [(a.size, a.seconds / b.seconds) for a, b in zip(matched, cross, strict=True) if b.seconds > 0]
    return _curve([(size, min(1.0, ratio)) for size, ratio in pairs]) if pairs else None


def in_turn_curve(alone: list[Point], turn: list[Point], bandwidth: float, memory: list[dict]) -> list[dict] | None:
    """The catalog's `vector_in_turn` steps from bench.in_turn_points: by bytes per call, what running in turn adds
    to the ops' time alone, as a share of the memory curve's streaming rate (the estimator adds a call's bytes at
    that rate over the share, less the streaming time: roofline.stream_extra_s): streaming time / (streaming time + time
    in turn - time alone), at most 1. A size whose chain ran MAX_IN_TURN times its ops alone or more was disturbed
    (as a convolution set's, kernels.in_turn): its rate is kept whole. None without measurements."""
    shares, steps = [], [Step(**s) for s in memory]
    for a, b in zip(alone, turn, strict=True):
        if a.seconds > 0:
            stream = a.size / (bandwidth * Efficiency.at(steps, a.size))
            extra = b.seconds - a.seconds if 1.0 < b.seconds / a.seconds < MAX_IN_TURN else 0.0
            shares.append((a.size, stream / (stream + extra)))
    return _curve(shares) if shares else None


def fresh_curve(fresh: list[Point], bandwidth: float) -> list[dict] | None:
    """The catalog's `fresh_output` steps from bench.fresh_points: by the bytes a step touches (each Point's size),
    the rate its ops write fresh outputs (FRESH_ELEMENTS floats an op over its time) as a share of the memory
    bandwidth, at most 1 (roofline.fresh_output_s). None without measurements."""
    rates = [(p.size, 4.0 * FRESH_ELEMENTS / p.seconds / bandwidth) for p in fresh if p.seconds > 0]
    return _curve(rates) if rates else None


def bias_passes(plain: list[Point], biased: list[Point], bandwidth: float, memory: list[dict]) -> float | None:
    """The catalog's `gemm_bias_passes` from bench's linear layers (kernels.bias_points): the median over the layers
    of the time a bias adds to the GEMM (addmm less mm) in passes over the output's bytes at the memory curve, as
    the estimator prices them (serial bytes of passes x the output, looked up at their own size: a few rounds of a
    fixed point). Never below 0; None without measurements. The catalog's `gemm_output_passes` alike, from
    kernels.output_points: a GEMM into rotating outputs less the same into one output."""
    ratios = []
    for a, b in zip(plain, biased, strict=True):
        extra, passes = b.seconds - a.seconds, 1.0
        for _ in range(8):
            passes = max(0.0, extra * bandwidth * _at(memory, max(passes, 1e-3) * a.size) / a.size)
        ratios.append(passes)
    return statistics.median(ratios) if ratios else None


def _curve(points: list[tuple[float, float]], cap: float = 1.0) -> list[dict]:
    """Measured (size, efficiency) points as catalog steps, each efficiency held under `cap` (a convolution's may
    pass 1: schema.ConvStep). Each step starts half-way (geometrically) from the previous point, so an op takes the
    efficiency of the measured size nearest to its own."""
    merged: dict[float, list[float]] = {}
    for size, eff in points:  # equal sizes (two convs of the same intensity) share their mean
        merged.setdefault(float(f"{size:.4g}"), []).append(eff)
    points = sorted((size, sum(v) / len(v)) for size, v in merged.items())
    steps = []
    for i, (size, eff) in enumerate(points):
        low = 0.0 if i == 0 else math.sqrt(points[i - 1][0] * size)
        eff = min(cap, max(MIN_EFFICIENCY, eff))
        if steps and float(f"{low:.4g}") <= steps[-1]["min_size"]:
            continue
        steps.append({"min_size": float(f"{low:.4g}"), "efficiency": round(eff, 4)})
    return steps


def in_turn_note(factors: dict[str, dict[str, float]]) -> str:
    """The efficiency note's words on kernels.in_turn: how much longer each set of convolution layers took run in
    turn than each alone, both batches together ('' where nothing was measured)."""
    parts = [
        f"{kind} {phase} x{value:.3g}" for kind, by in sorted(factors.items()) for phase, value in sorted(by.items())
    ]
    return f"; convolution layers timed in turn, not each alone ({', '.join(parts)})" if parts else ""


def _body(p: Point, dispatch_s: float) -> float:
    """Seconds of real work in one call: its time less the dispatch floor (never below a tenth of it)."""
    return max(p.seconds - dispatch_s, 0.1 * p.seconds)


def _seconds(t: float, dispatch_s: float) -> float:
    return max(t - dispatch_s, 0.1 * t)


def conv_setup(full: list, small: list, dispatch_s: float) -> float:
    """Seconds a convolution call costs beyond the dispatch floor whatever its batch: the median over the layers
    measured at two batches (`full` and `small`, (FLOPs, bytes, seconds) per call, in pairs) of the intercept of
    the line through their two times, t = setup + FLOPs x seconds per FLOP; 0 without pairs. A layer whose two
    sizes differ by less than half is left out."""
    if len(full) != len(small):
        return 0.0
    intercepts = []
    for (f, _, t), (f_small, _, t_small) in zip(full, small, strict=True):
        ratio = f / f_small if f_small > 0 else 0.0
        if ratio >= 1.5:
            intercepts.append((ratio * t_small - t) / (ratio - 1))
    return max(0.0, statistics.median(intercepts) - dispatch_s) if intercepts else 0.0


def channel_block(points: list[tuple[int, int, float]]) -> int | None:
    """The channel block a CPU's convolution library rounds dense layers up to, read off `points` (input channels,
    output channels, seconds: kernels.block_points): for each of kernels.BLOCK_CANDIDATES, the times modelled as
    one rate over the channels it computes (kernels.blocked_channels: a·Cp·Kp, the layers' spatial size and batch
    being equal), that rate fitted in log space; the block whose model leaves the least squared log error, the
    smallest of equals. None from fewer than three layers."""
    from advisor.calibration.kernels import BLOCK_CANDIDATES
    from advisor.estimator.kernels import blocked_channels

    if len(points) < 3 or any(t <= 0 for *_, t in points):
        return None
    best = None
    for block in BLOCK_CANDIDATES:
        logs = [math.log(t / math.prod(blocked_channels(c, k, block))) for c, k, t in points]
        mean = sum(logs) / len(logs)
        error = sum((v - mean) ** 2 for v in logs)
        if best is None or error < best[0] - 1e-9:
            best = (error, block)
    return best[1]


def reorder_curves(points: list[tuple[int, float, float]], block: int | None, bandwidth: float) -> dict[str, list]:
    """A CPU's `conv_reorder` curves from kernels.reorder_points, (channels, elements, seconds of both passes): each
    point's efficiency against `bandwidth` by the bytes one pass moves (estimator.kernels.layout_passes), 'aligned'
    for channel counts on the library's `block`, 'padded' for the others; {} without a block or points. A point
    whose NCHW layer was no slower than its NHWC twin (noise on a small one) is left out. The passes' fixed cost per
    call (the intercept of the line through a kind's two smallest layers, as conv_setup reads a layer's) is left
    out too: a convolution's fixed cost per call, fitted after these passes are taken off (op_setup_s), holds it."""
    from advisor.estimator.kernels import layout_passes

    if not block:
        return {}
    kinds: dict[str, list[tuple[float, float]]] = {}
    for channels, elements, seconds in points:
        if seconds <= 0:
            continue
        (nbytes, _, padded), *_ = layout_passes(channels, channels, elements, elements, False, block, 4, False, False)
        kinds.setdefault("padded" if padded else "aligned", []).append((nbytes, seconds))
    curves = {}
    for kind, rows in sorted(kinds.items()):
        rows.sort()
        fixed = 0.0
        if len(rows) >= 2 and rows[1][0] > rows[0][0]:
            (b1, t1), (b2, t2) = rows[:2]
            fixed = min(max(0.0, t1 - b1 * (t2 - t1) / (b2 - b1)), 0.9 * t1)
        curves[kind] = _curve(clustered([(b, 2 * b / (t - fixed) / bandwidth) for b, t in rows]))
    return curves


def reorder_seconds(geometry: tuple, backward: bool, block: int, bandwidth: float, curves: dict) -> float:
    """Seconds of the layout reorders of one calibration layer (kernels.geometry) at the fitted `curves`."""
    from advisor.estimator.kernels import layout_passes, reorder_s

    cin, cout, x, y, spatial = geometry
    passes = layout_passes(int(cin), int(cout), x, y, bool(spatial), block, 4, backward, True)
    return reorder_s(passes, bandwidth, curves, at=_at)


def _efficiencies(m: Measurements, fp32: float, bandwidth: float) -> dict:
    """The curves of the calibrated fields: GEMM shape cap, convolutions, named ops. Where the CPU's layout reorders
    were measured (`conv_reorder`), the dense and depthwise curves are fitted on the layers' times less theirs."""
    out: dict = {}
    block = channel_block(m.blocks)
    reorders = reorder_curves(m.reorder, block, bandwidth)
    geometry = m.conv_geometry
    lists = {"conv": (m.conv, m.conv_small), "conv_backward": (m.conv_backward, m.conv_backward_small),
             "depthwise": (m.depthwise, m.depthwise_small),
             "depthwise_backward": (m.depthwise_backward, m.depthwise_backward_small)}  # fmt: skip
    if reorders and all(len(geometry.get(k, [])) == len(full) for k, (full, _) in lists.items()):
        # each layer's time less its reorders' at the fitted rates, at both batches (the quarter batch's activations
        # a quarter of the full one's, as its FLOPs are): the curves and the fixed cost are the kernels' own
        out["conv_reorder"] = reorders

        def less(points: list, geos: list, full: list, backward: bool) -> list:
            kept = []
            for (f, b, t), g, (f_full, *_) in zip(points, geos, full, strict=False):
                share = f / f_full if f_full > 0 else 1.0
                scaled = (*g[:2], g[2] * share, g[3] * share, g[4])
                kept.append((f, b, max(t - reorder_seconds(scaled, backward, block, bandwidth, reorders), 0.1 * t)))
            return kept

        lists = {k: (less(full, geometry[k], full, k.endswith("backward")),
                     less(small, geometry[k], full, k.endswith("backward")) if len(small) == len(full) else small)
                 for k, (full, small) in lists.items()}  # fmt: skip

    def gemm_cap(points: list[tuple[float, float, float]]) -> list[dict]:
        # FLOPs per byte -> efficiency; past the squarest measured shape the cap no longer binds
        pts = monotone([(f / b, f / _seconds(t, m.dispatch_s) / fp32) for f, b, t in points])
        return _curve([*pts, (2 * pts[-1][0], 1.0)])

    if m.skinny:
        out["matmul_by_intensity"] = gemm_cap(m.skinny)
    layouts = {name: gemm_cap(points) for name, points in sorted(m.skinny_layouts.items()) if points}
    if layouts:
        out["matmul_by_layout"] = layouts
    setups = {}
    for op, key, (data, small), dw_key, (dw, dw_small), tr_key, tr in (
        ("aten.convolution", "conv_by_intensity", lists["conv"], "depthwise_by_intensity", lists["depthwise"],
         "transposed_by_intensity", m.transposed),
        ("aten.convolution_backward", "conv_backward_by_intensity", lists["conv_backward"],
         "depthwise_backward_by_intensity", lists["depthwise_backward"], "transposed_backward_by_intensity",
         m.transposed_backward),
    ):  # fmt: skip
        # the call's fixed cost from dense and depthwise layers alike (transposed ones are timed at one batch and
        # pay it too); only the dense ones' efficiency rises with FLOPs per byte (a depthwise layer's backward slows
        # down from 3x3 to 7x7 kernels on some CPUs)
        both = len(data) == len(small) and len(dw) == len(dw_small)
        setup = conv_setup(data + dw, small + dw_small, m.case_dispatch_s) if both else 0.0
        if setup > 0:
            setups[op] = f"{setup:.4g}"
        # a dense layer's rate may pass the square GEMM's (schema.ConvStep); a depthwise or transposed one's not
        for points, field, shape, cap in (
            (data, key, monotone, CONV_EFFICIENCY_MAX),
            (dw, dw_key, clustered, 1.0),
            (tr, tr_key, clustered, 1.0),
        ):
            if points:
                rates = [(f / b, f / max(t - m.case_dispatch_s - setup, 0.1 * t) / fp32) for f, b, t in points]
                out[field] = _curve(shape(rates), cap=cap)
    if setups:
        out["op_setup_s"] = setups
    curves = {}
    memory = _curve([(p.size, p.size / _body(p, m.dispatch_s) / bandwidth) for p in m.copy]) if m.copy else None
    for op, points in sorted(m.ops.items()):
        # each call against its own roofline at the peaks: max(FLOPs / peak, bytes / bandwidth); a scatter's
        # zeroed table (a fourth figure) is taken off at the memory curve's speed first
        rows = []
        for f, b, t, *table in points:
            t = _seconds(t, m.case_dispatch_s)
            if table and memory:
                t = max(t - table[0] / (bandwidth * _at(memory, table[0])), 0.1 * t)
            rows.append((b, max(f / fp32, b / bandwidth) / t))
        curves[op] = _curve(rows)
    if curves:
        out["op_curves"] = curves
    windows = op_windows(m, curves, fp32, bandwidth)
    if windows:
        out["op_window"] = windows
    return out


def op_windows(m: Measurements, curves: dict, fp32: float, bandwidth: float) -> dict[str, dict]:
    """Each pooling op's cost per window element beyond its curve's (schema.WindowCost): its wide-window call
    (`Measurements.windows`) less what its curve gives a call of those FLOPs and bytes, over the FLOPs beyond the
    reference calls' FLOPs per byte. An op whose wide call costs no more than its curve says gets 0."""
    out = {}
    for op, (f, b, t) in sorted(m.windows.items()):
        reference = [p for p in m.ops.get(op, []) if p[1] > 0]
        if op not in curves or not reference or b <= 0:
            continue
        ratio = statistics.median(p[0] / p[1] for p in reference)
        beyond = f - ratio * b
        if beyond <= 0:
            continue
        by_curve = max(f / fp32, b / bandwidth) / _at(curves[op], b)
        per_flop = max(0.0, (_seconds(t, m.case_dispatch_s) - by_curve) / beyond)
        out[op] = {"flops_per_byte": float(f"{ratio:.4g}"), "seconds_per_flop": float(f"{per_flop:.4g}")}
    return out


def _at(steps: list[dict], size: float) -> float:
    value = steps[0]["efficiency"]
    for step in steps:
        if size >= step["min_size"]:
            value = step["efficiency"]
    return value


def optimizer_step_points(m: Measurements) -> list[dict]:
    """Efficiency.optimizer_step from fit.optimizer_cold's two optimizers: at each step size, the warm cost per step
    plus the small optimizer's cold start, less what its own data accounts for; and each byte of optimizer data
    at the large optimizer's penalty over the small one's per byte more (never below 0: a large optimizer that
    came out faster cold says nothing about its bytes)."""
    small, large = optimizer_data_bytes(COLD_SIZE), optimizer_data_bytes(COLD_LARGE)
    both = len(m.optimizer_cold_large) == len(m.optimizer_cold)
    out = []
    for i, p in enumerate(m.optimizer_cold):
        per_byte = max(0.0, (m.optimizer_cold_large[i].seconds - p.seconds) / (large - small)) if both else 0.0
        point = {
            "step_bytes": round(p.size),
            "seconds": f"{m.optimizer_step_s + max(0.0, p.seconds - per_byte * small):.3g}",
        }
        if per_byte:
            point["seconds_per_byte"] = f"{per_byte:.3g}"
        out.append(point)
    return out


def build(m: Measurements, phase_overhead_s: dict[str, float] | None = None) -> dict:
    """The overlay as plain data (validates as catalog YAML)."""
    ident = device_id(m)
    today = dt.date.today().isoformat()
    host = platform.node() or "this host"
    source = f"measured by advisor calibrate on {host} ({m.name})"
    peaks, curves = {}, {}
    for dtype, points in m.matmul.items():
        rates = [(p.size, p.size / _body(p, m.dispatch_s)) for p in points]
        peak = max(r for _, r in rates)
        peaks[dtype] = peak
        curves[dtype] = _curve([(size, rate / peak) for size, rate in rates])
    bw = [(p.size, p.size / _body(p, m.dispatch_s)) for p in m.copy]
    if not bw:
        raise ValueError("no memory measurements")
    # the peak from calls long enough that the dispatch floor does not dominate them; on a GPU from the largest
    # call, gigabytes beyond its L2 (an add of a few megabytes runs from the L2 at several times the HBM's rate)
    bandwidth = (
        max(bw)[1]
        if m.device == "cuda"
        else max(r for s, r in bw if s >= PEAK_MIN_BYTES)
        if any(s >= PEAK_MIN_BYTES for s, _ in bw)
        else max(r for _, r in bw)
    )
    fp32 = peaks["fp32"]
    vector = min(1.0, max(MIN_EFFICIENCY, m.vector_flops_s / fp32))
    overhead = phase_overhead_s if phase_overhead_s is not None else m.phase_overhead_s
    op_overhead = overhead.get("forward", m.dispatch_s)
    cpu = m.device == "cpu"
    host_phase = {}
    if not cpu and m.host_op_s:
        # a GPU runs asynchronously: the host's time per op bounds a phase from below (host_op_s, by phase where
        # fitted) and each kernel adds only its floor on the device, tiny kernels measured back to back
        host_phase, overhead, op_overhead = dict(overhead), {}, m.launch_s or m.dispatch_s
    matrix = {d: f"{v:.4g}" for d, v in peaks.items()}
    device = {
        "id": ident,
        "name": f"{m.name} (calibrated)",
        "aliases": ["local", f"local-{m.device}"] if cpu else [f"local-{m.device}"],
        "vendor": _vendor(m.name),
        "kind": "cpu" if cpu else "gpu",
        "software_stack": "cpu" if cpu else "cuda",
        "efficiency": ident,
        "memory_bandwidth": f"{bandwidth:.4g}",
        "matrix_flops": matrix,
        "vector_flops": {"fp32": f"{fp32:.4g}"},
        "tdp_watts": 1,
        "launch_year": dt.date.today().year,
        "source": source,
        "as_of": today,
        "notes": (
            f"Peaks are the best rates measured with {m.threads} thread(s): torch.mm per dtype (largest square "
            f"size), an out-of-place add for memory; not datasheet figures. tdp_watts and launch_year are "
            f"placeholders (not measured). Calibration took {m.seconds:.1f} s."
        ),
    }
    if cpu:
        device["cores"] = os.cpu_count() or 1
        device["threads_per_core"] = 1
    else:
        device["memory_bytes"] = _gpu_memory_bytes()
        device["notes"] += _nvml_note(device)
    efficiency = {
        "id": ident,
        "note": (
            f"{source}, {today}, {m.threads} thread(s): matmul efficiency by FLOPs per call per dtype relative "
            f"to the best measured rate, capped by FLOPs per byte for GEMMs with a small dimension; "
            f"convolutions by FLOPs per byte, dense, depthwise and transposed apart, with a fixed cost per call "
            f"from the dense and depthwise layers at two batches; "
            f"an out-of-place add by bytes per call for memory-bound work"
            + ("" if m.threads == 1 or not m.handoff_matched else ", and slowed where another thread wrote its input")
            + (
                "; oneDNN's layout reorders around a convolution by bytes per pass, taken off the conv curves"
                if m.reorder
                else ""
            )
            + in_turn_note(m.conv_in_turn)
            + "; "
            "the common vector ops by bytes per call against their own roofline"
            + (
                ", slowed as they run in turn in a step, each output in memory no recent op touched"
                if m.vector_turn
                else ""
            )
            + (", and none writing its output faster than a chain in turn writes fresh ones" if m.fresh else "")
            + ("; a linear layer's bias as passes over its output (addmm less mm)" if m.bias_mm else "")
            + ("; a GEMM's fresh output as passes over it (rotating outputs less one)" if m.output_again else "")
            + "; gelu throughput for other "
            "vector work; and the fixed cost of an op per training phase and of a module call from timing "
            "tiny nets (advisor/calibration/nets)."
            + (f" Each size-dependent figure is the median of {m.sweeps} sweeps." if m.sweeps > 1 else "")
        ),
        "matrix": copy.deepcopy(curves["fp32"]),  # a copy: YAML would otherwise write an alias
        "vector": round(vector, 4),
        "memory": _curve([(size, rate / bandwidth) for size, rate in bw]),
        "op_overhead_s": f"{op_overhead:.4g}",
        "device_link": 0.7,
        "network": 0.6,
        "collective_latency_s": "50us",
        "matrix_by_dtype": curves,
        **_efficiencies(m, fp32, bandwidth),
    }
    if m.permuted_copy:  # a copy is never taken faster than a plain one of its bytes
        efficiency["permuted_copy"] = [{"run": int(run), "ratio": round(max(1.0, r), 3)} for run, r in m.permuted_copy]
    if m.draws:
        efficiency["draw_half_ratio"] = {op: round(ratio, 3) for op, ratio in m.draws.items()}
    if cpu:
        efficiency["calibration_threads"] = m.threads
        if m.first_touch_s_per_byte > 0:
            efficiency["first_touch_bandwidth"] = f"{1.0 / m.first_touch_s_per_byte:.4g}"
        if m.optimizer_cold:  # the cost per step, warm, plus the cold start by the bytes before it
            efficiency["optimizer_step"] = optimizer_step_points(m)
        if m.loop_op_s is not None:
            efficiency["loop_op_s"] = f"{m.loop_op_s:.4g}"
            efficiency["loop_call_s"] = f"{m.loop_call_s or 0.0:.4g}"
        block = channel_block(m.blocks)
        if block:
            efficiency["conv_channel_block"] = block
        if m.parallel_op_s:
            efficiency["parallel_op_s"] = [f"{t:.3g}" for t in m.parallel_op_s]
        handoff = handoff_curve(m.handoff_matched, m.handoff_cross)
        if handoff:
            efficiency["handoff"] = handoff
        turn = in_turn_curve(m.vector_alone, m.vector_turn, bandwidth, efficiency["memory"])
        if turn:
            efficiency["vector_in_turn"] = turn
        fresh = fresh_curve(m.fresh, bandwidth)
        if fresh:
            efficiency["fresh_output"] = fresh
        passes = bias_passes(m.bias_mm, m.bias_addmm, bandwidth, efficiency["memory"])
        if passes is not None:
            efficiency["gemm_bias_passes"] = round(passes, 3)
        passes = bias_passes(m.output_again, m.output_rotating, bandwidth, efficiency["memory"])
        if passes is not None:
            efficiency["gemm_output_passes"] = round(passes, 3)
        efficiency["fused_rnn"] = ["LSTM"]  # PyTorch runs LSTMs through oneDNN on CPUs, the others per step
    else:
        efficiency["fused_rnn"] = ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"]  # cuDNN
        family = _catalog_family(m.name)
        if family:  # the libraries' rules for misaligned, NCHW and wave-quantized work, which square GEMMs never show
            efficiency["kernel_rules"] = family
        if m.launch_s:
            efficiency["launch_s"] = f"{m.launch_s:.4g}"
        if m.host_op_s:
            efficiency["host_op_s"] = f"{m.host_op_s:.4g}"
            if host_phase:
                efficiency["host_phase_s"] = {k: f"{v:.4g}" for k, v in host_phase.items()}
    if m.op_efficiency:
        efficiency["op_efficiency"] = dict(m.op_efficiency)
    if overhead:
        efficiency["phase_overhead_s"] = {k: f"{v:.4g}" for k, v in overhead.items()}
    floors = dict(m.floors)
    for op, points in m.ops.items():  # no call of a measured op is cheaper than its smallest measured call
        if op not in SCATTERS:  # (a scatter's smallest call still zeroes its table)
            floors.setdefault(op, min(points, key=lambda p: p[1])[2])
    if floors:
        efficiency["min_op_s"] = {op: f"{_seconds(t, m.case_dispatch_s):.4g}" for op, t in sorted(floors.items())}
    if m.module_overhead_s:
        efficiency["module_overhead_s"] = f"{m.module_overhead_s:.4g}"
    if m.warnings:
        efficiency["calibration_warnings"] = list(m.warnings)
    return {"devices": [device], "efficiency": [efficiency]}


def _catalog_family(gpu_name: str) -> str | None:
    """The shipped catalog's efficiency profile for a GPU of this name (None for a GPU it does not list)."""
    from advisor.catalog.load import load_catalog
    from advisor.profiler.device import match_catalog

    cat = load_catalog(use_env=False)
    ident = match_catalog(gpu_name, cat)
    return cat.devices[ident].efficiency if ident else None


def _vendor(name: str) -> str:
    low = name.lower()
    for vendor in ("nvidia", "amd", "intel", "arm", "apple"):
        if vendor in low:
            return vendor
    return "unknown"


def _nvml_note(device: dict) -> str:
    """NVML's view of the GPU (name, clocks, driver) for the notes; sets sm_count. Empty without NVML."""
    from advisor.profiler.device import nvml_info

    info = nvml_info()
    if info is None:
        return " NVML was not available."
    if info.sm_count:
        device["sm_count"] = info.sm_count
    if info.sm_clock_max_mhz:
        device["boost_clock"] = f"{info.sm_clock_max_mhz:.0f} MHz"
    return (
        f" NVML: {info.name}, max SM clock {info.sm_clock_max_mhz:.0f} MHz, max memory clock "
        f"{info.memory_clock_max_mhz:.0f} MHz, driver {info.driver_version}."
    )


def _gpu_memory_bytes() -> float:
    import torch

    return float(torch.cuda.get_device_properties(0).total_memory)


def models(data: dict):
    """The overlay's device and efficiency profile as catalog models (raises on invalid data)."""
    from advisor.catalog.schema import Device, Efficiency

    return Device(**data["devices"][0]), Efficiency(**data["efficiency"][0])
