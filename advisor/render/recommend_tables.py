"""Recommendations for people: the question, the ranked table, rejections, and why when nothing qualifies.

Tables fit the console (advisor/render/columns.py): at 100 columns the rank, the configuration, the total
time and the cost always show, in full; `--wide` shows every column. Owned machines are labelled "owned,
amortized" beside their instance id, and prices more than a year old are flagged."""

from __future__ import annotations

from advisor import units
from advisor.render.catalog_tables import console
from advisor.render.columns import Col, print_table
from advisor.render.marks import OLD_PRICE, OWNED, old_price_note, stale

OPTION_COLUMNS = (
    Col("#", right=True, keep=True),
    Col("instance", wrap=True),
    Col("region", priority=7),
    Col("nodes × devices"),
    Col("precision, layout", priority=1, wrap=True),
    Col("micro × accum", priority=8, right=True),
    Col("step", priority=2, right=True, keep=True),
    Col("fixed", priority=6, right=True, keep=True),
    Col("total time", right=True, keep=True),
    Col("cost", right=True, keep=True),
    Col("MFU", priority=4, right=True, keep=True),
    Col("mem headroom", priority=8, right=True, keep=True),
)


def _headroom(option) -> str:
    if option.memory_headroom_bytes is None:
        return "-"
    return units.fmt_bytes(option.memory_headroom_bytes)


def instance_label(option) -> str:
    """The instance id (it starts with the provider), marked when the machines are owned."""
    return f"{option.instance}\n({OWNED})" if option.owned else option.instance


def setup_cell(o) -> str:
    """Precision and the parallel layout ('TP8 PP2 DP4 zero1 SP full': full is activation recomputation), with
    spot pricing when used."""
    extras = ["spot"] if o.pricing == "spot" else []
    return ", ".join([o.precision, o.layout().label(), *extras])


def cost_cell(option) -> str:
    return units.fmt_money(option.cost_usd) + (f" {OLD_PRICE}" if stale(option.price_as_of) else "")


def option_row(o) -> list[str]:
    mark = "*" if o.pareto else ""
    bound = " (input)" if o.input_bound else ""
    return [
        f"{o.rank}{mark}" if o.rank is not None else mark,
        instance_label(o),
        o.region,
        f"{o.nodes} × {o.devices_per_node} {o.device}",
        setup_cell(o),
        f"{o.micro_batch} × {o.accumulation}",
        units.fmt_duration(o.step_time_s) + bound,
        units.fmt_duration(o.startup_s + o.checkpoint_s + o.eval_s),
        units.fmt_duration(o.total_time_s) + (f" ±{100 * o.error_band:.0f}%" if o.error_band else ""),
        cost_cell(o),
        f"{100 * o.mfu:.0f} %",
        _headroom(o),
    ]


def print_options(options, title: str, wide: bool = False) -> None:
    shown = print_table(console, title, OPTION_COLUMNS, [option_row(o) for o in options], wide)
    notes = []
    if "fixed" in shown:
        notes.append("fixed: start-up (provisioning, setup, initialisation), checkpoint writes and evaluation")
    if any(o.input_bound for o in options):
        notes.append(
            "(input): the host's image decoding holds the devices back: more --loader-workers or vCPUs would help "
            "(--format yaml lists the assumptions)"
        )
    old = old_price_note([o.price_as_of for o in options])
    if old:
        notes.append(old)
    odd = [o for o in options if o.global_batch_reason]
    if odd:
        notes.append(f"global batch not exact for {len(odd)} of these: {odd[0].global_batch_reason}")
    for note in notes:
        console.print(note, soft_wrap=True)


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


def batch_line(question) -> str | None:
    if not question.global_batch:
        return None
    line = f"global batch {question.global_batch:,} from {question.global_batch_source}"
    return line + (f" ({question.global_batch_detail})" if question.global_batch_detail else "")


def print_rejections(rec) -> None:
    counts = rec.rejections.counts
    if not counts:
        return
    shown = ", ".join(f"{reason} {n:,}" for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    console.print(f"rejected: {shown}", soft_wrap=True)


def answer_line(best) -> str:
    owned = f" ({OWNED})" if best.owned else ""
    fixed = best.startup_s + best.checkpoint_s + best.eval_s
    return (
        f"[bold]answer[/bold]: {best.label()}{owned}: {units.fmt_duration(best.total_time_s)}, "
        f"{units.fmt_money(best.cost_usd)} ({units.fmt_money(best.usd_per_hour)}/h); of the time, "
        f"{units.fmt_duration(fixed)} is start-up, checkpoints and evaluation"
    )


def print_recommendation(rec, wide: bool = False) -> None:
    console.print(question_line(rec), soft_wrap=True)
    batch = batch_line(rec.question)
    if batch:
        console.print(batch, soft_wrap=True)
    console.print(
        f"{rec.candidates:,} candidates, {rec.estimated:,} estimated, {rec.qualifying:,} qualify "
        f"({rec.elapsed_s:.2f} s); catalog as of {rec.catalog_as_of['oldest']} .. {rec.catalog_as_of['newest']}",
        soft_wrap=True,
    )
    if rec.options:
        print_options(rec.options, f"best {len(rec.options)} of {rec.qualifying:,} (* Pareto front)", wide)
        best = rec.options[0]
        console.print(answer_line(best), soft_wrap=True)
        if best.global_batch_reason:
            console.print(f"global batch {best.global_batch}: {best.global_batch_reason}", soft_wrap=True)
    print_rejections(rec)
    if rec.explanation is not None:
        e = rec.explanation
        console.print(f"[bold red]nothing qualifies[/bold red]: {e.summary}", soft_wrap=True)
        console.print(f"binding: {', '.join(e.binding)}")
        extremes = [o for o in (e.fastest, e.cheapest) if o is not None]
        if extremes:
            print_options(extremes, "fastest and cheapest options overall", wide)
        console.print("to get an answer:")
        for line in e.relax:
            console.print(f"  - {line}", soft_wrap=True)
    if rec.pareto:
        title = f"time-cost Pareto front ({len(rec.pareto)} options, fastest first)"
        print_options(rec.pareto[:12], title, wide)


COMPARE_COLUMNS = (
    Col("kind", keep=True),
    Col("best", wrap=True),
    Col("nodes × devices, layout", priority=2, wrap=True),
    Col("precision", priority=5),
    Col("total time", right=True, keep=True),
    Col("cost", right=True, keep=True),
    Col("fastest of the kind", priority=4, wrap=True),
    Col("its time", priority=3, right=True, keep=True),
    Col("its cost", priority=3, right=True, keep=True),
    Col("note", priority=1, wrap=True),
)


def print_comparison(result, wide: bool = False) -> None:
    q = result.question
    console.print(question_line(type("R", (), {"question": q})()), soft_wrap=True)
    batch = batch_line(q)
    if batch:
        console.print(batch, soft_wrap=True)
    rows = []
    shown = []
    for row in result.rows:
        b, f = row.best, row.fastest
        if b is None:
            rows.append([row.kind, "-", "", "", "", "", "", "", "", row.note])
            continue
        shown += [b, f]
        rows.append(
            [
                row.kind,
                f"{instance_label(b)} ({b.pricing})",
                f"{b.nodes} × {b.devices_per_node} {b.device}, {b.layout().label()}",
                b.precision,
                units.fmt_duration(b.total_time_s),
                cost_cell(b),
                f"{f.instance_name} {f.nodes} × {f.devices_per_node}",
                units.fmt_duration(f.total_time_s),
                cost_cell(f),
                row.note,
            ]
        )
    print_table(console, "best option of each kind", COMPARE_COLUMNS, rows, wide)
    old = old_price_note([o.price_as_of for o in shown])
    if old:
        console.print(old, soft_wrap=True)
    if result.verdict:
        console.print(f"[bold]answer[/bold]: {result.verdict}", soft_wrap=True)
