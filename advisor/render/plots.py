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
    from advisor.estimator.fused import recurrent_modules
    from advisor.estimator.kernels import channels_last
    from advisor.estimator.roofline import peak_for, profile_op_time, step_bytes, within
    from advisor.vocab import COMPUTE_DTYPE, CPU_CAST

    plt = require_matplotlib()
    batch = batch or profile.batch_size
    dtype = COMPUTE_DTYPE[precision]
    points: dict[str, list[tuple[float, float]]] = {"matrix": [], "vector": [], "memory": []}
    stepped = recurrent_modules(profile, efficiency, device.kind == "cpu")
    nhwc = channels_last(profile)
    for op in profile.ops:
        if op.layout == CPU_CAST and device.kind != "cpu":
            continue  # a CPU kernel's dtype conversion
        t = profile_op_time(
            op, device, efficiency, profile.precision, precision, batch, step_bytes(profile, batch),
            recurrent=within(op.module, stepped), channels_last=nhwc,
        )  # fmt: skip
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


def comparison_png(result, path: Path) -> Path:
    """`advisor compare --plot`: each device kind's best option as bars side by side, total time on the left and
    cost on the right, both on log scales (a CPU can take 40× as long as a GPU), with the fastest option of the kind
    as a hollow diamond, the deadline and budget as dashed lines, and the winning kind in bold."""
    plt = require_matplotlib()
    rows = list(reversed(result.rows))  # the first kind on top
    fig, (ax_t, ax_c) = plt.subplots(1, 2, figsize=(11, 1.6 + 0.75 * len(rows)), sharey=True)
    hours = 3600.0
    c = result.question.constraints
    spans: dict = {ax_t: [], ax_c: []}  # every value drawn, to fit the log axes
    for y, row in enumerate(rows):
        color = KIND_COLORS.get(row.kind, "tab:gray")
        if row.best is None:
            ax_t.text(0.02, y, row.note, transform=ax_t.get_yaxis_transform(), va="center", fontsize=8, color="gray")
            continue
        b, f = row.best, row.fastest
        for ax, value, text in (
            (ax_t, b.total_time_s / hours, units.fmt_duration(b.total_time_s)),
            (ax_c, b.cost_usd, units.fmt_money(b.cost_usd)),
        ):
            ax.barh(y, value, height=0.55, color=color, alpha=0.85)
            ax.text(value, y, f" {text}", va="center", fontsize=8)
            spans[ax].append(value)
        if f is not None and (f.instance, f.nodes, f.precision) != (b.instance, b.nodes, b.precision):
            for ax, value in ((ax_t, f.total_time_s / hours), (ax_c, f.cost_usd)):
                ax.scatter([value], [y + 0.36], marker="D", s=22, facecolors="none", edgecolors=color)
                spans[ax].append(value)
    labels = []
    for row in rows:
        b = row.best
        labels.append(row.kind.upper() + ("" if b is None else f"\n{b.instance_name} {b.nodes}×{b.devices_per_node}"))
    ax_t.set_yticks(range(len(rows)), labels, fontsize=8)
    ax_t.set_ylim(-0.6, len(rows) - 0.4)
    for tick, row in zip(ax_t.get_yticklabels(), rows, strict=True):
        if row.kind == result.winner:
            tick.set_fontweight("bold")
    if c.deadline_s is not None:
        deadline = f"deadline {units.fmt_duration(c.deadline_s)}"
        ax_t.axvline(c.deadline_s / hours, color="tab:red", ls="--", lw=1, label=deadline)
        spans[ax_t].append(c.deadline_s / hours)
    if c.budget_usd is not None:
        ax_c.axvline(c.budget_usd, color="tab:orange", ls="--", lw=1, label=f"budget {units.fmt_money(c.budget_usd)}")
        spans[ax_c].append(c.budget_usd)
    for ax, label in ((ax_t, "total training time (hours, log)"), (ax_c, "cost (USD, log)")):
        ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.grid(True, axis="x", which="both", alpha=0.25)
        values = [v for v in spans[ax] if v > 0]
        if values:  # bars start at the left edge: at least two decades, and room for the labels on the right
            lo, hi = min(values) / 3, max(values) * 4
            ax.set_xlim(min(lo, hi / 100), hi)
    ax_t.scatter([], [], marker="D", s=22, facecolors="none", edgecolors="black", label="the fastest of the kind")
    handles = [h for ax in (ax_t, ax_c) for h in ax.get_legend_handles_labels()[0]]
    q = result.question
    fig.suptitle(f"{q.profile}, {q.workload_text}: the best option of each kind (by {c.objective})", fontsize=11)
    fig.legend(handles=handles, fontsize=8, loc="lower center", ncol=len(handles), frameon=False)
    fig.subplots_adjust(left=0.17, right=0.98, bottom=0.9 / fig.get_figheight() + 0.05, wspace=0.08)
    return _save(fig, path, plt)
