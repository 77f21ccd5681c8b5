"""Tables of catalog entries for people (machines get the same data from --format json/yaml)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from rich.table import Table

from advisor import units
from advisor.catalog.schema import Catalog, Device, Instance
from advisor.render.columns import Col, make_console, print_table
from advisor.render.marks import OLD_PRICE, old_price_note, stale
from advisor.vocab import DTYPES

# $COLUMNS when set, else the terminal's width; piped output gets wide tables instead of rich's 80 columns.
console = make_console()


def _site(source: str) -> str:
    host = urlparse(source).netloc
    return host.removeprefix("www.") if host else (source[:28] + "…" if len(source) > 29 else source)


def _peak(dev: Device, dtype: str) -> str:
    value = dev.matrix_flops.get(dtype) or dev.vector_flops.get(dtype)
    return units.fmt_flops(value).replace("FLOP/s", "") if value else "-"


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


DEVICE_COLUMNS = (
    Col("id", wrap=True),
    Col("kind", priority=5),
    Col("memory", right=True, keep=True),
    Col("bandwidth", priority=2, right=True, keep=True),
    Col("bf16", priority=1, keep=True),
    Col("fp16", priority=4, keep=True),
    Col("fp32", priority=3, keep=True),
    Col("TDP W", priority=6, right=True, keep=True),
    Col("year", priority=6, right=True, keep=True),
    Col("source", priority=7, wrap=True),
    Col("as of", priority=5, keep=True),
)


def device_rows(devices: list[Device]) -> list[list[str]]:
    return [
        [
            dev.id,
            dev.kind,
            units.fmt_bytes(dev.memory_bytes) if dev.memory_bytes else "host",
            units.fmt_bandwidth(dev.memory_bandwidth),
            _peak(dev, "bf16"),
            _peak(dev, "fp16"),
            _peak(dev, "fp32"),
            f"{dev.tdp_watts:g}",
            str(dev.launch_year),
            _site(dev.source),
            dev.as_of.isoformat(),
        ]
        for dev in sorted(devices, key=lambda d: (d.kind, d.vendor, d.id))
    ]


def _count(inst: Instance) -> str:
    n = inst.device_count
    return f"{n:g}" if n == round(n) else f"{n:.2f}"


INSTANCE_COLUMNS = (
    Col("id", wrap=True),
    Col("provider", priority=6, wrap=True),
    Col("devices", wrap=True),
    Col("vCPU", priority=4, right=True, keep=True),
    Col("host mem", priority=5, right=True, keep=True),
    Col("network", priority=3, keep=True),
    Col("on-demand", right=True, keep=True),
    Col("spot", priority=2, right=True, keep=True),
    Col("regions", priority=7, wrap=True),
    Col("as of", priority=1, keep=True),
)


def instance_rows(instances: list[Instance]) -> list[list[str]]:
    rows = []
    for inst in sorted(instances, key=lambda i: (i.provider, i.hourly_usd() or 0, i.id)):
        regions = inst.pricing.regions
        rows.append(
            [
                inst.id,
                inst.provider + (" (amortized)" if inst.amortized else ""),
                f"{_count(inst)}× {inst.device}",
                str(inst.vcpus or "-"),
                units.fmt_bytes(inst.host_memory_bytes) if inst.host_memory_bytes else "-",
                units.fmt_bits(inst.network.bandwidth_per_direction) if inst.network else "-",
                _money(inst.hourly_usd()),
                _money(inst.hourly_usd(spot=True)),
                regions[0] + (f" +{len(regions) - 1}" if len(regions) > 1 else ""),
                inst.as_of.isoformat() + (f" {OLD_PRICE}" if stale(inst.as_of) else ""),
            ]
        )
    return rows


def print_lists(
    catalog: Catalog, devices: list[Device] | None, instances: list[Instance] | None, wide: bool = False
) -> None:
    """The lists fitted to the terminal (advisor/render/columns.py): ids, memory and prices always whole."""
    if devices is not None:
        title = f"{len(devices)} devices (dense peaks; matrix unit where there is one)"
        print_table(console, title, DEVICE_COLUMNS, device_rows(devices), wide)
    if instances is not None:
        title = f"{len(instances)} instances (USD per hour for the whole node)"
        print_table(console, title, INSTANCE_COLUMNS, instance_rows(instances), wide)
        note = old_price_note([i.as_of for i in instances])
        if note:
            console.print(note, soft_wrap=True)


def _kv(title: str) -> Table:
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    return table


def print_entry(catalog: Catalog, entry: Device | Instance) -> None:
    if isinstance(entry, Device):
        _print_device(catalog, entry)
    else:
        _print_instance(catalog, entry)


NETWORKS = ("efa", "infiniband", "ethernet", "roce", "ena", "dcn", "gpudirect-tcpx", "gpudirect-tcpxo", "rdma")


def _link(link) -> str:
    if link is None:
        return "-"
    bw = link.bandwidth_per_direction
    shown = units.fmt_bits(bw) if link.type in NETWORKS else units.fmt_bandwidth(bw)
    return f"{link.type}, {shown} per direction"


def _print_device(catalog: Catalog, dev: Device) -> None:
    table = _kv(f"{dev.name} ({dev.id})")
    table.add_row("vendor / kind", f"{dev.vendor} / {dev.kind}")
    if dev.aliases:
        table.add_row("aliases", ", ".join(dev.aliases))
    table.add_row("memory", units.fmt_bytes(dev.memory_bytes) if dev.memory_bytes else "host memory")
    table.add_row("memory bandwidth", units.fmt_bandwidth(dev.memory_bandwidth))
    for unit, peaks in (("matrix", dev.matrix_flops), ("vector", dev.vector_flops)):
        for dtype in DTYPES:
            value = peaks.get(dtype)
            if value:
                table.add_row(f"{unit} {dtype} (dense)", units.fmt_flops(value))
    table.add_row("device link", _link(dev.device_link))
    table.add_row("host link", _link(dev.host_link))
    if dev.cores:
        table.add_row("cores × threads", f"{dev.cores} × {dev.threads_per_core}")
    if dev.sm_count:
        table.add_row("SMs", str(dev.sm_count))
    table.add_row("TDP", f"{dev.tdp_watts:g} W")
    table.add_row("launched", str(dev.launch_year))
    table.add_row("efficiency profile", dev.efficiency)
    table.add_row("source", dev.source)
    for extra in dev.extra_sources:
        table.add_row("", extra)
    table.add_row("as of", dev.as_of.isoformat())
    if dev.notes:
        table.add_row("notes", dev.notes)
    offered = sorted(i.id for i in catalog.instances.values() if i.device == dev.id)
    table.add_row("instances", ", ".join(offered) or "-")
    console.print(table)


def _print_instance(catalog: Catalog, inst: Instance) -> None:
    dev = catalog.devices[inst.device]
    p = inst.pricing
    table = _kv(f"{inst.provider} {inst.name} ({inst.id})")
    table.add_row("devices", f"{_count(inst)} × {dev.name} ({dev.id})")
    memory = units.fmt_bytes(inst.host_memory_bytes) if inst.host_memory_bytes else "-"
    table.add_row("vCPUs / host memory", f"{inst.vcpus or '-'} / {memory}")
    table.add_row("fabric", _link(inst.fabric))
    table.add_row("network", _link(inst.network))
    table.add_row("max nodes", str(inst.max_nodes))
    per = " per device" if p.per == "device" else ""
    table.add_row("on-demand", f"${p.on_demand_usd_per_hour:,.4g}/h{per} (node: ${inst.hourly_usd():,.2f}/h)")
    if p.spot_usd_per_hour is not None:
        table.add_row("spot", f"${p.spot_usd_per_hour:,.4g}/h{per} (node: ${inst.hourly_usd(True):,.2f}/h)")
    table.add_row("regions", ", ".join(p.regions))
    table.add_row(
        "billing",
        f"per {units.fmt_duration(p.billing_granularity_s)}, minimum {units.fmt_duration(p.minimum_billed_s)}",
    )
    if inst.amortized:
        table.add_row("amortized", "yes: an estimate of owning it; override with an overlay (--catalog)")
    table.add_row("source", inst.source)
    for extra in inst.extra_sources:
        table.add_row("", extra)
    old = f" {OLD_PRICE} more than a year old: check the price" if stale(inst.as_of) else ""
    table.add_row("as of", inst.as_of.isoformat() + old)
    if inst.notes:
        table.add_row("notes", inst.notes)
    console.print(table)


def print_import(result, output: Path) -> None:
    summary = result.summary(output)
    console.print(
        f"wrote {summary['instances']} instances ({summary['offers']} priced offers) to {output}; "
        f"{summary['skipped_rows']} rows skipped"
    )
    for reason, count in summary["skipped_by_reason"].items():
        console.print(f"  skipped {count}: {reason}")
    if summary["unmapped_accelerators"]:
        console.print(f"  accelerators with no catalog device: {', '.join(summary['unmapped_accelerators'])}")
