"""Measurements -> a catalog overlay (one device and its efficiency profile), and where it is written.

The device's peaks are the best rates measured (the largest matmul per dtype, the fastest copy), and the
efficiency curves are each measurement as a fraction of that peak, so the estimator's roofline reproduces
the measured times op by op. The fixed cost per op comes from timing tiny training steps (see
`fit_phase_overhead`).
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import os
import platform
import re
from pathlib import Path

from advisor.calibration.bench import Measurements, Point

NETS_DIR = Path(__file__).resolve().parent / "nets"
MIN_EFFICIENCY = 0.001


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


def _curve(points: list[tuple[float, float]]) -> list[dict]:
    """Measured (size, efficiency) points as catalog steps. Each step starts half-way (geometrically) from
    the previous point, so an op takes the efficiency of the measured size nearest to its own."""
    merged: dict[float, list[float]] = {}
    for size, eff in points:  # equal sizes (two convs of the same intensity) share their mean
        merged.setdefault(float(f"{size:.4g}"), []).append(eff)
    points = sorted((size, sum(v) / len(v)) for size, v in merged.items())
    steps = []
    for i, (size, eff) in enumerate(points):
        low = 0.0 if i == 0 else math.sqrt(points[i - 1][0] * size)
        eff = min(1.0, max(MIN_EFFICIENCY, eff))
        steps.append({"min_size": float(f"{low:.4g}"), "efficiency": round(eff, 4)})
    return steps


def _body(p: Point, dispatch_s: float) -> float:
    """Seconds of real work in one call: its time less the dispatch floor (never below a tenth of it)."""
    return max(p.seconds - dispatch_s, 0.1 * p.seconds)


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
    bandwidth = max(r for _, r in bw)
    fp32 = peaks["fp32"]
    vector = min(1.0, max(MIN_EFFICIENCY, m.vector_flops_s / fp32))
    overhead = phase_overhead_s or {}
    op_overhead = overhead.get("forward", m.dispatch_s)
    cpu = m.device == "cpu"
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
            f"size), copy_ for memory; not datasheet figures. tdp_watts and launch_year are placeholders "
            f"(not measured). Calibration took {m.seconds:.1f} s."
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
            f"to the best measured rate, copy bandwidth by bytes per call relative to the fastest, gelu "
            f"throughput for vector work, and the fixed cost per op of each training phase from timing tiny "
            f"nets (advisor/calibration/nets)."
        ),
        "matrix": copy.deepcopy(curves["fp32"]),  # a copy: YAML would otherwise write an alias
        "vector": round(vector, 4),
        "memory": _curve([(size, rate / bandwidth) for size, rate in bw]),
        "op_overhead_s": f"{op_overhead:.4g}",
        "device_link": 0.7,
        "network": 0.6,
        "collective_latency_s": "50us",
        "matrix_by_dtype": curves,
    }
    if cpu:
        efficiency["calibration_threads"] = m.threads
    if m.op_efficiency:
        efficiency["op_efficiency"] = dict(m.op_efficiency)
    if m.conv:
        # efficiency of each measured convolution against the fp32 matmul peak, by FLOPs per byte
        conv = [(f / b, f / max(t - m.dispatch_s, 0.1 * t) / fp32) for f, b, t in m.conv]
        efficiency["conv_by_intensity"] = _curve(conv)
    if overhead:
        efficiency["phase_overhead_s"] = {k: f"{v:.4g}" for k, v in overhead.items()}
    return {"devices": [device], "efficiency": [efficiency]}


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


def fit_phase_overhead(data: dict, m: Measurements, tick=lambda s: None) -> dict[str, float]:
    """Fixed cost per op in each phase: time training steps of the tiny nets, subtract the roofline's
    work time of their ops (from the measured curves), and divide by the number of ops. Median over nets."""
    import statistics

    from advisor.estimator.roofline import profile_op_time
    from advisor.profiler.profile import profile_model

    device, eff = models(data)
    eff = eff.model_copy(update={"op_overhead_s": 1e-9, "phase_overhead_s": {}})
    per_phase: dict[str, list[float]] = {"forward": [], "backward": [], "optimizer": []}
    for path in sorted(NETS_DIR.glob("tiny_*.py")):
        tick(f"overhead ({path.stem})")
        prof = profile_model(path, batch_size=4, device=m.device, precision="fp32", warmup=3, repeats=15)
        measured = {
            "forward": prof.timing.forward_s,
            "backward": prof.timing.backward_s,
            "optimizer": prof.timing.optimizer_s,
        }
        for phase, seconds in measured.items():
            ops = [o for o in prof.ops if o.phase == phase]
            calls = sum(o.count for o in ops)
            work = sum(profile_op_time(o, device, eff, "fp32", "fp32", 4).seconds - 1e-9 * o.count for o in ops)
            if calls:
                per_phase[phase].append(max(m.dispatch_s, (seconds - work) / calls))
    return {k: statistics.median(v) for k, v in per_phase.items() if v}
