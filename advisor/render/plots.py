"""PNG plots: the time-cost plane of a recommendation, and a profile's ops on a device's roofline.

matplotlib is an optional extra (`pip install "advisor[plot]"`), imported only when a plot is drawn;
without it the user gets one clear line. Files are written atomically (rendered to memory first).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from advisor import units
from advisor.errors import UserError
from advisor.io import write_atomic

if TYPE_CHECKING:
    from advisor.profiler.schema import Profile

KIND_COLORS = {"cpu": "tab:gray", "gpu": "tab:green", "tpu": "tab:blue", "accelerator": "tab:purple"}


def require_matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("plots need matplotlib, which is not installed", 'pip install "advisor[plot]"') from None
    return plt


def _save(fig, path: Path, plt) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    return write_atomic(Path(path), buffer.getvalue(), "--plot")


def pareto_png(rec, path: Path) -> Path:
    """Every option that fits (total time × cost, log-log, by device kind), the Pareto front, the deadline
    and budget lines, and the recommended option."""
    plt = require_matplotlib()
    options = rec.feasible or rec.pareto or rec.options
    fig, ax = plt.subplots(figsize=(8, 5.5))
    hours = 3600.0
    for kind, color in KIND_COLORS.items():
        group = [o for o in options if o.device_kind == kind]
        if group:
            ax.scatter(
                [o.total_time_s / hours for o in group], [o.cost_usd for o in group],
                s=10, alpha=0.35, color=color, label=f"{kind} ({len(group)})",
            )  # fmt: skip
    front = sorted(rec.pareto, key=lambda o: o.total_time_s)
    if front:
        ax.step(
            [o.total_time_s / hours for o in front], [o.cost_usd for o in front],
            where="post", color="black", lw=1.2, marker="o", ms=4, label=f"Pareto front ({len(front)})",
        )  # fmt: skip
    c = rec.question.constraints
    if c.deadline_s is not None:
        ax.axvline(
            c.deadline_s / hours, color="tab:red", ls="--", lw=1, label=f"deadline {units.fmt_duration(c.deadline_s)}"
        )
    if c.budget_usd is not None:
        ax.axhline(c.budget_usd, color="tab:orange", ls="--", lw=1, label=f"budget {units.fmt_money(c.budget_usd)}")
    if rec.options:
        best = rec.options[0]
        ax.scatter(
            [best.total_time_s / hours],
            [best.cost_usd],
            s=140,
            marker="*",
            color="gold",
            edgecolor="black",
            zorder=5,
            label=f"#1 {best.instance_name} {best.nodes}×{best.devices_per_node}",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("total training time (hours)")
    ax.set_ylabel("cost (USD)")
    q = rec.question
    ax.set_title(f"{q.profile}, {q.workload_text}: time vs cost", fontsize=11)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="best")
    return _save(fig, path, plt)


def roofline_png(profile: Profile, device, efficiency, precision: str, path: Path, batch: int | None = None) -> Path:
    """The profile's ops (one point per op record, at `batch`, default the profile's) on `device`'s roofline:
    x = arithmetic intensity (FLOPs per byte), y = achieved FLOP/s under the estimator's per-op model, with
    the datasheet peaks (matrix and vector, in the precision's dtype) and the memory-bandwidth slope."""
    from advisor.estimator.roofline import peak_for, profile_op_time
    from advisor.vocab import COMPUTE_DTYPE

    plt = require_matplotlib()
    batch = batch or profile.batch_size
    dtype = COMPUTE_DTYPE[precision]
    points: dict[str, list[tuple[float, float]]] = {"matrix": [], "vector": [], "memory": []}
    for op in profile.ops:
        t = profile_op_time(op, device, efficiency, profile.precision, precision, batch)
        if t.flops <= 0 or t.bytes <= 0:
            continue
        points[op.category].append((t.flops / t.bytes, t.flops / t.seconds))
    fig, ax = plt.subplots(figsize=(8, 5.5))
    xs = [x for group in points.values() for x, _ in group] or [1.0]
    lo, hi = min(xs) / 4, max(xs) * 4
    bw = device.memory_bandwidth
    matrix_peak, _ = peak_for(device, dtype, "matrix")
    vector_peak, _ = peak_for(device, dtype, "vector")
    lines = [("matrix", matrix_peak, "darkgreen"), ("vector", vector_peak, "navy")]
    for label, peak, color in lines:
        if not peak or (label == "vector" and peak == matrix_peak):
            continue
        ridge = peak / bw
        ax.plot(
            [lo, ridge, max(hi, ridge * 4)], [lo * bw, peak, peak], lw=1.5, color=color,
            label=f"{label} peak {units.fmt_flops(peak)}, ridge at {ridge:.3g} FLOP/B",
        )  # fmt: skip
    colors = {"matrix": "tab:green", "vector": "tab:blue", "memory": "tab:gray"}
    for category, group in points.items():
        if group:
            ax.scatter(
                [x for x, _ in group],
                [y for _, y in group],
                s=14,
                alpha=0.6,
                color=colors[category],
                label=f"{category} ops ({len(group)})",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOPs per byte)")
    ax.set_ylabel("FLOP/s achieved (estimated)")
    ax.set_title(
        f"{profile.name} on {device.name}, {precision}, batch {batch} (bandwidth {units.fmt_bandwidth(bw)})",
        fontsize=11,
    )
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, path, plt)
