"""What every command shares: the --format and --catalog options, and turning errors into exit codes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from advisor.errors import UserError
from advisor.render.output import Format

FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="table for people; json or yaml for machines.")]
CatalogOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--catalog",
        help="Extra catalog file or folder (repeatable); entries add to or override shipped ones by id. "
        "Also read from $ADVISOR_CATALOG (paths separated by ':').",
    ),
]


WideOpt = Annotated[
    bool, typer.Option("--wide", help="Tables: every column at full width, past the terminal's edge if need be.")
]


PlotOpt = Annotated[
    Path | None,
    typer.Option("--plot", help="Also draw the profile's ops on the device's roofline (PNG; needs matplotlib)."),
]


if TYPE_CHECKING:
    from advisor.profiler.schema import Profile


def check_plot(path: Path | None) -> None:
    """Before any work: the PNG path can be written and matplotlib is there."""
    if path is not None:
        from advisor.io import check_writable
        from advisor.render.plots import require_matplotlib

        check_writable(path, "--plot")
        require_matplotlib()


def plot_roofline(path: Path, profile: Profile, device, cat, precision: str, batch: int | None = None) -> None:
    from advisor.render.plots import roofline_png

    roofline_png(profile, device, cat.efficiency[device.efficiency], precision, path, batch=batch)
    note(f"roofline plot written to {path}")


def fail(message: str, code: int = 2) -> None:
    sys.stderr.write(f"error: {message}\n")
    raise SystemExit(code)


def run_app(app: typer.Typer) -> None:
    """Run the typer app: user errors become one line and exit code 2, bugs exit 1 with a short report."""
    try:
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            raise SystemExit(code)
    except UserError as exc:
        fail(exc.line())
    except SystemExit:
        raise
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        # typer's click (bundled or not): Exit carries a code, usage errors can show themselves.
        name = type(exc).__name__
        if name == "Exit" and hasattr(exc, "exit_code"):
            raise SystemExit(exc.exit_code) from None
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            raise SystemExit(2) from None
        if name == "Abort":
            fail("aborted", 1)
        if os.environ.get("ADVISOR_DEBUG"):
            raise
        fail(
            f"internal error: {type(exc).__name__}: {exc} (this is a bug in advisor; "
            "rerun with ADVISOR_DEBUG=1 for the traceback and report it)",
            1,
        )


def note(message: str) -> None:
    """A remark for people, on stderr so that --format json stays clean."""
    sys.stderr.write(f"note: {message}\n")
