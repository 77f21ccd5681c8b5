"""The estimate for people: step time and its parts, memory per device, total time and cost."""

from __future__ import annotations

from rich.table import Table

from advisor import units
from advisor.estimator.estimate import Estimate
from advisor.render.catalog_tables import console


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f} %" if whole > 0 else "-"


def print_estimate(est: Estimate, profile_name: str) -> None:
    c = est.config
    where = est.instance or est.device
    layout = f"{c.nodes} node{'s' * (c.nodes > 1)} × {c.devices_per_node} {est.device}"
    console.print(
        f"[bold]{profile_name}[/bold] on [bold]{where}[/bold] ({layout}), {c.precision}, {c.strategy}"
        f"{', activation checkpointing' if c.checkpointing else ''}"
    )
    console.print(
        f"micro-batch {est.micro_batch} × accumulation {est.accumulation} × {c.world} devices "
        f"= global batch {est.global_batch}"
    )
    step = Table(title="step time", title_justify="left")
    for col in ("part", "time", "share", "bound"):
        step.add_column(col, justify="left" if col in ("part", "bound") else "right")
    for name, phase in est.phases.items():
        reps = est.accumulation if name != "optimizer" else 1
        step.add_row(
            name, units.fmt_duration(phase.seconds * reps), _pct(phase.seconds * reps, est.step_time_s), phase.bound
        )
    comm = est.comm
    if comm.total_s > 0:
        hidden = _pct(comm.total_s - comm.exposed_s, comm.total_s)
        step.add_row(
            "communication (exposed)",
            units.fmt_duration(comm.exposed_s),
            _pct(comm.exposed_s, est.step_time_s),
            f"{comm.bound}; {units.fmt_duration(comm.total_s)} in all, {hidden} hidden",
        )
    step.add_row("[bold]step[/bold]", f"[bold]{units.fmt_duration(est.step_time_s)}[/bold]", "100 %", "")
    console.print(step)
    if est.error_band is not None:
        console.print(f"expected error {est.error_basis}", overflow="fold")
    console.print(
        f"of which compute-bound {units.fmt_duration(est.compute_s)}, memory-bound "
        f"{units.fmt_duration(est.memory_bound_s)}, per-op overhead {units.fmt_duration(est.overhead_s)}, "
        f"exposed communication {units.fmt_duration(comm.exposed_s)}"
    )
    console.print(
        f"MFU {100 * est.mfu:.1f} %; {est.samples_per_s:,.1f} samples/s; "
        f"scaling efficiency {100 * est.scaling_efficiency:.0f} %"
    )
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
    if est.steps is not None:
        band = f" (±{100 * est.error_band:.0f} %)" if est.error_band is not None else ""
        line = f"{est.steps:,.0f} steps: {units.fmt_duration(est.total_time_s)}{band}"
        if est.cost_usd is not None:
            pricing = "spot" if c.spot else "on-demand"
            line += (
                f", {units.fmt_money(est.cost_usd)} ({c.nodes} × {units.fmt_money(est.node_usd_per_hour)}/h {pricing}, "
                "billing granularity applied)"
            )
        console.print(line)
    else:
        console.print("no workload given (--samples with --epochs, --steps or --tokens): one step only")
    console.print("assumptions:")
    for item in est.assumptions:
        console.print(f"  - {item}", overflow="fold")
