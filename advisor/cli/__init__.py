"""The `advisor` command line. Each command lives in its own module and only parses, calls, renders.

Nothing here imports torch at module level: `advisor --help` must stay fast.
"""

from __future__ import annotations

import sys

import typer

from advisor import __version__
from advisor.cli import catalog as catalog_cmd
from advisor.cli.common import run_app

app = typer.Typer(
    name="advisor",
    help="Which hardware to train a PyTorch model on, how long it takes, and what it costs.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion and --show-completion; names come from advisor/cli/complete.py
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"advisor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Which hardware to train a PyTorch model on, how long it takes, and what it costs."""


app.add_typer(catalog_cmd.app, name="catalog")

# Commands that need torch register here too; their modules import torch inside the command only.
COMMANDS = (
    "advisor.cli.profile",
    "advisor.cli.estimate",
    "advisor.cli.calibrate",
    "advisor.cli.validate",
    "advisor.cli.recommend",
    "advisor.cli.compare",
    "advisor.cli.show",
)
for _module in COMMANDS:
    try:
        __import__(_module)
        sys.modules[_module].register(app)
    except ModuleNotFoundError as exc:  # a command still being written
        if exc.name != _module:
            raise


def main() -> None:
    import warnings

    # torch warns on import when NumPy is missing, which advisor never needs; keep every command's output clean.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    run_app(app)
