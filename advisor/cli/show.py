"""`advisor show recs.yaml`: read an exported recommendation back and print it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor.cli.common import FormatOpt, WideOpt
from advisor.render.output import Format, emit


def register(app: typer.Typer) -> None:
    @app.command("show")
    def show_cmd(
        path: Annotated[Path, typer.Argument(help="A file written by 'advisor recommend --export'.")],
        fmt: FormatOpt = Format.table,
        wide: WideOpt = False,
    ) -> None:
        """Print an exported recommendation (the same table, JSON or YAML as when it was made)."""
        from advisor.render.export import read_export
        from advisor.render.recommend_tables import print_recommendation

        rec = read_export(path)
        emit(rec, fmt, lambda: print_recommendation(rec, wide))
