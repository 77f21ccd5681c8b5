"""The estimate for people: step time and its parts, memory per device, total time and cost."""

from __future__ import annotations

from rich.table import Table

from advisor import units
from advisor.estimator.estimate import Estimate
from advisor.render.catalog_tables import console


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f} %" if whole > 0 else "-"


# What an estimate that does not fit must not show as achievable (JSON/YAML get null).
UNACHIEVABLE = (
    "step_time_s", "parts", "phases", "compute_s", "memory_bound_s", "overhead_s", "comm", "comm_by_dim",
    "samples_per_s", "mfu", "scaling_efficiency", "input", "run", "total_time_s", "node_usd_per_hour", "cost_usd",
    "error_band",
)  # fmt: skip
PART_LABELS = {
    "forward": "forward",
    "backward": "backward",
    "recompute": "recompute",
    "tp": "TP communication (exposed)",
    "cp": "CP communication (exposed)",
    "bubble": "pipeline bubble",
    "pp": "PP sends (exposed)",
    "dp": "DP communication (exposed)",
    "optimizer": "optimizer",
    "input": "input pipeline (waiting)",
}


def layout_line(est: Estimate) -> str:
    lay, c = est.layout, est.config
    bits = [f"tp {lay.tp} × pp {lay.pp} × cp {lay.cp} × dp {lay.dp} = {c.world} devices"]
    if lay.vpp > 1:
        bits.append(f"{lay.vpp} interleaved chunks per stage")
    bits.append(f"sharding {lay.sharding}")
    if lay.sequence_parallel:
        bits.append("sequence parallel")
    bits.append(f"recompute {lay.recompute}")
    if lay.pp > 1:
        bits.append(f"stages hold {'/'.join(map(str, est.stage_blocks))} blocks")
    return f"layout [bold]{lay.label()}[/bold]: " + "; ".join(bits)


def estimate_view(est: Estimate) -> dict:
    """The estimate as machines get it: the Estimate itself, with every time and cost null when it does not fit."""
    from advisor.io import plain

    data = plain(est)
    if not est.fits:
        data.update({key: None for key in UNACHIEVABLE})
    return data


def _header(est: Estimate, profile_name: str) -> None:
    c = est.config
    where = est.instance or est.device
    layout = f"{c.nodes} node{'s' * (c.nodes > 1)} × {c.devices_per_node} {est.device}"
    console.print(f"[bold]{profile_name}[/bold] on [bold]{where}[/bold] ({layout}), {c.precision}", soft_wrap=True)
    console.print(layout_line(est))
    console.print(
        f"micro-batch {est.micro_batch} × accumulation {est.accumulation} × {est.layout.dp} replicas "
        f"= global batch {est.global_batch:,} ({est.global_batch_source})",
        soft_wrap=True,
    )
    if est.global_batch_reason:
        console.print(f"global batch: {est.global_batch_reason}", soft_wrap=True)


def _memory_table(est: Estimate) -> None:
    m = est.memory
    mem = Table(title="memory per device", title_justify="left")
    mem.add_column("part")
    mem.add_column("bytes", justify="right")
    for label, value in (
        ("parameters", m.parameter_bytes),
        ("gradients", m.gradient_bytes),
        ("optimizer state", m.optimizer_state_bytes),
        ("activations", m.activation_bytes),
        ("temporaries", m.temporary_bytes),
        ("reserve", m.reserve_bytes),
        ("[bold]total[/bold]", m.total_bytes),
    ):
        mem.add_row(label, units.fmt_bytes(value))
    if m.capacity_bytes is not None:
        verdict = "fits" if m.fits else "[red]does NOT fit[/red]"
        mem.add_row(
            "capacity", f"{units.fmt_bytes(m.capacity_bytes)} ({verdict}, headroom {units.fmt_bytes(m.headroom_bytes)})"
        )
    console.print(mem)


def _step_table(est: Estimate) -> None:
    title = "step time" + (" (the slowest pipeline stage)" if est.layout.pp > 1 else "")
    step = Table(title=title, title_justify="left")
    for col in ("part", "time", "share", "what bounds it"):
        step.add_column(col, justify="left" if col in ("part", "what bounds it") else "right", overflow="fold")
    for name, seconds in est.parts.items():
        if seconds <= 0 and name not in ("forward", "backward", "optimizer"):
            continue
        note = ""
        if name in est.phases:
            note = est.phases[name].bound
        elif name in est.comm_by_dim:
            d = est.comm_by_dim[name]
            note = f"{d.fabric}; {units.fmt_duration(d.total_s)} in all"
        elif name == "bubble":
            lay = est.layout
            note = f"(pp−1)/(v·m) = {lay.pp - 1}/({lay.vpp}·{est.accumulation}) of the busy time"
        elif name == "input" and est.input is not None:
            note = f"host: {est.input.samples_per_s:,.0f} images/s on {est.input.vcpus_per_node} vCPUs per node"
        step.add_row(PART_LABELS[name], units.fmt_duration(seconds), _pct(seconds, est.step_time_s), note)
    step.add_row("[bold]step[/bold]", f"[bold]{units.fmt_duration(est.step_time_s)}[/bold]", "100 %", "")
    console.print(step)
    if est.error_band is not None:
        console.print(f"expected error {est.error_basis}", soft_wrap=True)
    comm = est.comm
    console.print(
        f"of which compute-bound {units.fmt_duration(est.compute_s)}, memory-bound "
        f"{units.fmt_duration(est.memory_bound_s)}, per-op overhead {units.fmt_duration(est.overhead_s)}, "
        f"exposed communication {units.fmt_duration(comm.exposed_s)}",
        soft_wrap=True,
    )
    active = {k: d for k, d in est.comm_by_dim.items() if d.total_s > 0}
    if active:
        table = Table(title="communication per step and device", title_justify="left")
        for col in ("dimension", "total", "exposed", "bytes", "fabric"):
            table.add_column(col, justify="left" if col in ("dimension", "fabric") else "right")
        for k, d in active.items():
            table.add_row(
                k.upper(),
                units.fmt_duration(d.total_s),
                units.fmt_duration(d.exposed_s),
                units.fmt_bytes(d.bytes_per_step),
                d.fabric,
            )
        console.print(table)
    console.print(
        f"MFU {100 * est.mfu:.1f} %; {est.samples_per_s:,.1f} samples/s; "
        f"scaling efficiency {100 * est.scaling_efficiency:.0f} %"
    )


def _run_table(est: Estimate) -> None:
    run = est.run
    table = Table(title=f"the whole run: {est.steps:,.0f} steps", title_justify="left")
    table.add_column("part")
    table.add_column("time", justify="right")
    table.add_column("share", justify="right")
    table.add_column("what", overflow="fold")
    total = run.total_s
    every = units.fmt_duration(run.checkpoint_every_s) if run.checkpoint_every_s else "the end only"
    for label, seconds, what in (
        ("provisioning", run.provisioning_s, "launch to running nodes (catalog providers)"),
        ("setup", run.setup_s, "software stack on every node"),
        ("initialisation", run.init_s, "framework, devices, collectives"),
        ("training steps", run.train_s, f"{est.steps:,.0f} × {units.fmt_duration(est.step_time_s)}"),
        ("evaluation", run.eval_s, f"{100 * run.eval_share:.3g} % of training (--eval-share)"),
        (
            "checkpoints",
            run.checkpoint_s,
            f"{run.checkpoints} × {units.fmt_bytes(run.checkpoint_bytes)} in "
            f"{units.fmt_duration(run.checkpoint_write_s)} each, every {every} (--checkpoint-every)",
        ),
    ):
        table.add_row(label, units.fmt_duration(seconds), _pct(seconds, total), what)
    table.add_row("[bold]total[/bold]", f"[bold]{units.fmt_duration(total)}[/bold]", "100 %", "")
    console.print(table)


def print_estimate(est: Estimate, profile_name: str) -> None:
    c = est.config
    _header(est, profile_name)
    if est.fits:
        _step_table(est)
    _memory_table(est)
    if not est.fits:
        m = est.memory
        console.print(
            f"[bold red]does not fit[/bold red]: {units.fmt_bytes(m.total_bytes)} per device of "
            f"{units.fmt_bytes(m.capacity_bytes or 0)}, so it has no step time, total time or cost",
            soft_wrap=True,
        )
        if est.to_fit:
            console.print("what would make it fit:")
            for hint in est.to_fit:
                console.print(f"  - {hint}", soft_wrap=True)
        else:
            console.print("nothing in the catalog holds it with these settings", soft_wrap=True)
    elif est.steps is not None:
        _run_table(est)
        band = f" (±{100 * est.error_band:.0f} %)" if est.error_band is not None else ""
        line = f"total {units.fmt_duration(est.total_time_s)}{band}"
        if est.cost_usd is not None:
            pricing = "spot" if c.spot else "on-demand"
            line += (
                f", {units.fmt_money(est.cost_usd)} ({c.nodes} × {units.fmt_money(est.node_usd_per_hour)}/h {pricing}, "
                "the whole run billed, billing granularity applied)"
            )
        console.print(line, soft_wrap=True)
    else:
        console.print("no workload given (--samples with --epochs, --steps or --tokens): one step only")
    console.print("assumptions:")
    for item in est.assumptions:
        console.print(f"  - {item}", overflow="fold")


def print_search(result, profile_name: str) -> None:
    """`estimate --search`: the ranked layouts, then the best one in full."""
    console.print(
        f"[bold]{profile_name}[/bold] on [bold]{result.hardware}[/bold] ({result.nodes} node"
        f"{'s' * (result.nodes > 1)}, {result.devices} devices), {result.precision}: {result.evaluated:,} layouts "
        f"evaluated, {result.fitting:,} fit ({result.elapsed_s:.2f} s)"
    )
    if not result.layouts:
        console.print("[red]no layout fits in memory[/red]: more devices, or a smaller micro-batch in the model file")
        return
    table = Table(title=f"the {len(result.layouts)} fastest layouts that fit", title_justify="left")
    for col in ("#", "layout", "micro × accum", "global", "step", "MFU", "memory"):
        table.add_column(col, justify="left" if col == "layout" else "right")
    for row in result.layouts:
        table.add_row(
            str(row.rank),
            row.label,
            f"{row.micro_batch} × {row.accumulation}",
            f"{row.global_batch:,}",
            units.fmt_duration(row.step_time_s),
            f"{100 * row.mfu:.1f} %",
            units.fmt_bytes(row.memory_bytes),
        )
    console.print(table)
    if result.best is not None:
        console.print("the best one in full:")
        print_estimate(result.best, profile_name)
