"""Recommendations for people: the question, the ranked table, rejections, and why when nothing qualifies."""

from __future__ import annotations

from rich.table import Table

from advisor import units
from advisor.render.catalog_tables import console

COLUMNS = (
    "#", "provider", "instance", "nodes × devices", "precision", "layout", "pricing",
    "step", "total time", "cost", "MFU", "mem headroom",
)  # fmt: skip


def _headroom(option) -> str:
    if option.memory_headroom_bytes is None:
        return "-"
    return units.fmt_bytes(option.memory_headroom_bytes)


def options_table(options, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col in COLUMNS:
        right = col in ("#", "step", "total time", "cost", "MFU", "mem headroom")
        table.add_column(col, justify="right" if right else "left")
    for o in options:
        mark = "*" if o.pareto else ""
        table.add_row(
            f"{o.rank}{mark}" if o.rank is not None else mark,
            o.provider,
            o.instance_name,
            f"{o.nodes} × {o.devices_per_node} {o.device}",
            o.precision,
            o.layout().label(),
            o.pricing,
            units.fmt_duration(o.step_time_s),
            units.fmt_duration(o.total_time_s),
            units.fmt_money(o.cost_usd),
            f"{100 * o.mfu:.0f} %",
            _headroom(o),
        )
    return table


def question_line(rec) -> str:
    q = rec.question
    c = q.constraints
    parts = [f"[bold]{q.profile}[/bold] ({units.fmt_count(q.parameters)} parameters), {q.workload_text}"]
    if c.deadline_s is not None:
        parts.append(f"deadline {units.fmt_duration(c.deadline_s)}")
    if c.budget_usd is not None:
        parts.append(f"budget {units.fmt_money(c.budget_usd)}")
    parts.append(f"minimizing {c.objective}")
    if c.providers:
        parts.append(f"providers {','.join(c.providers)}")
    if c.device_filter:
        parts.append(f"devices {','.join(c.device_filter)}")
    parts.append(f"pricing {c.pricing}, at most {c.max_devices} devices")
    return "; ".join(parts)


def print_rejections(rec) -> None:
    counts = rec.rejections.counts
    if not counts:
        return
    shown = ", ".join(f"{reason} {n:,}" for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    console.print(f"rejected: {shown}", soft_wrap=True)


def print_recommendation(rec) -> None:
    console.print(question_line(rec), soft_wrap=True)
    console.print(
        f"{rec.candidates:,} candidates, {rec.estimated:,} estimated, {rec.qualifying:,} qualify "
        f"({rec.elapsed_s:.2f} s); catalog as of {rec.catalog_as_of['oldest']} .. {rec.catalog_as_of['newest']}"
    )
    if rec.options:
        console.print(options_table(rec.options, f"best {len(rec.options)} of {rec.qualifying:,} (* Pareto front)"))
        best = rec.options[0]
        console.print(
            f"[bold]answer[/bold]: {best.label()}: {units.fmt_duration(best.total_time_s)}, "
            f"{units.fmt_money(best.cost_usd)} ({units.fmt_money(best.usd_per_hour)}/h)",
            soft_wrap=True,
        )
    print_rejections(rec)
    if rec.explanation is not None:
        e = rec.explanation
        console.print(f"[bold red]nothing qualifies[/bold red]: {e.summary}", soft_wrap=True)
        console.print(f"binding: {', '.join(e.binding)}")
        extremes = [o for o in (e.fastest, e.cheapest) if o is not None]
        if extremes:
            console.print(options_table(extremes, "fastest and cheapest options overall"))
        console.print("to get an answer:")
        for line in e.relax:
            console.print(f"  - {line}", soft_wrap=True)
    if rec.pareto:
        console.print(
            options_table(rec.pareto[:12], f"time-cost Pareto front ({len(rec.pareto)} options, fastest first)")
        )


def print_comparison(result) -> None:
    from advisor.recommender.model import Recommendation  # noqa: F401 - the rows hold Options

    q = result.question
    console.print(question_line(type("R", (), {"question": q})()), soft_wrap=True)
    table = Table(title="best option of each kind", title_justify="left")
    for col in (
        "kind",
        "best",
        "nodes × devices, layout",
        "precision",
        "total time",
        "cost",
        "fastest of the kind",
        "its time",
        "its cost",
        "note",
    ):
        table.add_column(col, justify="right" if col in ("total time", "cost", "its time", "its cost") else "left")
    for row in result.rows:
        b, f = row.best, row.fastest
        if b is None:
            table.add_row(row.kind, "-", "", "", "", "", "", "", "", row.note)
            continue
        table.add_row(
            row.kind,
            f"{b.provider} {b.instance_name} ({b.pricing})",
            f"{b.nodes} × {b.devices_per_node} {b.device}, {b.layout().label()}",
            b.precision,
            units.fmt_duration(b.total_time_s),
            units.fmt_money(b.cost_usd),
            f"{f.instance_name} {f.nodes} × {f.devices_per_node}",
            units.fmt_duration(f.total_time_s),
            units.fmt_money(f.cost_usd),
            row.note,
        )
    console.print(table)
    if result.verdict:
        console.print(f"[bold]answer[/bold]: {result.verdict}", soft_wrap=True)
