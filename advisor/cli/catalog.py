"""`advisor catalog …`: list, show, validate and import hardware and cloud catalog entries."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from advisor.cli import complete
from advisor.cli.common import CatalogOpt, FormatOpt, WideOpt, note
from advisor.errors import UserError
from advisor.render.output import Format, emit

app = typer.Typer(help="Hardware and cloud catalog: list, show, validate, import.", no_args_is_help=True)

KINDS = ("cpu", "gpu", "tpu", "accelerator")


def load(catalog_paths: list[Path] | None):
    from advisor.catalog.load import load_catalog

    catalog = load_catalog(catalog_paths)
    for item in catalog.overrides:
        note(f"overlay overrides {item}")
    return catalog


@app.command("list")
def list_cmd(
    what: Annotated[str, typer.Argument(help="devices, instances or all.")] = "all",
    kind: Annotated[
        str | None,
        typer.Option(help="Only this device kind: cpu, gpu, tpu, accelerator.", autocompletion=complete.kind),
    ] = None,
    provider: Annotated[
        str | None,
        typer.Option(help="Only instances of this provider (aws, gcp, …).", autocompletion=complete.provider),
    ] = None,
    catalog: CatalogOpt = None,
    fmt: FormatOpt = Format.table,
    wide: WideOpt = False,
) -> None:
    """List catalog devices and instances with their key figures, sources and dates."""
    from advisor.render import catalog_tables as tables

    if what not in ("devices", "instances", "all"):
        raise UserError(f"unknown listing {what!r}", "use devices, instances or all")
    if kind is not None and kind not in KINDS:
        raise UserError(f"unknown --kind {kind!r}", f"use one of {', '.join(KINDS)}")
    cat = load(catalog)
    providers = sorted({i.provider for i in cat.instances.values()})
    if provider is not None and provider.lower() not in providers:
        import difflib

        close = difflib.get_close_matches(provider.lower(), providers, n=3)
        raise UserError(f"unknown --provider {provider!r}", f"known: {', '.join(providers)}", close)
    devices = [d for d in cat.devices.values() if kind in (None, d.kind)]
    instances = [
        i
        for i in cat.instances.values()
        if (provider is None or i.provider == provider.lower()) and kind in (None, cat.devices[i.device].kind)
    ]
    if provider is not None and what == "all":
        what = "instances"
    data: dict = {}
    if what in ("devices", "all"):
        data["devices"] = devices
    if what in ("instances", "all"):
        data["instances"] = instances
    emit(data, fmt, lambda: tables.print_lists(cat, data.get("devices"), data.get("instances"), wide))


@app.command("show")
def show_cmd(
    name: Annotated[
        str,
        typer.Argument(
            help="A device or instance: 'h100', 'H100 SXM', 'p5.48xlarge'.", autocompletion=complete.hardware
        ),
    ],
    catalog: CatalogOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Show every figure of one device or instance, with its sources."""
    from advisor.catalog.lookup import find
    from advisor.render import catalog_tables as tables

    cat = load(catalog)
    entry = find(cat, name)
    emit(entry, fmt, lambda: tables.print_entry(cat, entry))


@app.command("validate")
def validate_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Catalog files or folders to check.")],
    fmt: FormatOpt = Format.table,
) -> None:
    """Check catalog files: YAML, fields, units, ranges, duplicate ids, device references."""
    from advisor.catalog.load import validate_paths

    problems, cat = validate_paths(paths)
    summary = {
        "ok": not problems,
        "problems": problems,
        "devices": len(cat.devices) if cat else None,
        "instances": len(cat.instances) if cat else None,
    }

    def table() -> None:
        for line in problems:
            sys.stdout.write(f"{line}\n")
        if cat is not None:
            sys.stdout.write(
                f"ok: {len(cat.files)} files, {len(cat.devices)} devices, {len(cat.efficiency)} efficiency "
                f"profiles, {len(cat.instances)} instances\n"
            )
        else:
            sys.stdout.write(f"{len(problems)} problem{'s' * (len(problems) != 1)} found\n")

    emit(summary, fmt, table)
    if problems:
        raise typer.Exit(2)


@app.command("import-skypilot")
def import_skypilot_cmd(
    paths: Annotated[list[Path], typer.Argument(help="SkyPilot vms.csv files, or folders such as ~/.sky/catalogs/v9.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Overlay YAML to write.")],
    as_of: Annotated[
        str | None, typer.Option(help="Date the prices reflect (YYYY-MM-DD); default: each file's date.")
    ] = None,
    catalog: CatalogOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Turn SkyPilot price catalogs into an advisor instance overlay (prices, spot prices, regions, dated)."""
    import datetime as dt

    from advisor.catalog.skypilot import find_csvs, import_paths, write_overlay
    from advisor.cli.common import check_files
    from advisor.render import catalog_tables as tables

    check_files({"--output": output}, {"the SkyPilot catalog": find_csvs(paths)}, catalog)
    try:
        date = dt.date.fromisoformat(as_of) if as_of else None
    except ValueError:
        raise UserError(f"--as-of {as_of!r} is not a date", "write it as YYYY-MM-DD") from None
    cat = load(catalog)
    result = import_paths(paths, cat, date)
    write_overlay(result, output)
    emit(result.summary(output), fmt, lambda: tables.print_import(result, output))
