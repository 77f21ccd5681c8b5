"""What every command shares: the --format and --catalog options, and turning errors into exit codes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from advisor.cli import complete
from advisor.errors import UserError
from advisor.render.output import Format

# Exit codes: 0 an answer, 1 a bug in advisor, 2 a problem with the input, 3 `advisor estimate` on a
# configuration that does not fit in memory (the answer is printed, with what would make it fit).
EXIT_DOES_NOT_FIT = 3

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


CheckpointEvery = Annotated[
    str | None,
    typer.Option(
        help="Write a checkpoint this often: '30m', '2h'; 'end' for only the final one (default: the catalog's, "
        "hourly)."
    ),
]
EvalShare = Annotated[
    float | None,
    typer.Option(help="Evaluation time as a share of the training time, e.g. 0.02 (default: the catalog's, 0.01)."),
]


def parse_run_options(checkpoint_every: str | None, eval_share: float | None):
    """--checkpoint-every (a duration; 0 or 'end': only the final checkpoint) and --eval-share (0 to <1)."""
    from advisor import units
    from advisor.estimator.runtime import RunOptions

    every = None
    if checkpoint_every is not None:
        text = checkpoint_every.strip().lower()
        every = 0.0 if text in ("end", "never", "0") else units.parse_positive(text, "duration", "--checkpoint-every")
    if eval_share is not None and not 0 <= eval_share < 1:
        raise UserError(f"--eval-share must be at least 0 and below 1, got {eval_share:g}", "e.g. --eval-share 0.02")
    return RunOptions(checkpoint_every_s=every, eval_share=eval_share)


ProfileArg = Annotated[
    str, typer.Argument(help="A profile YAML, or the name of a shipped profile.", autocompletion=complete.profile)
]
TaskOpt = Annotated[
    str | None,
    typer.Option(
        "--task",
        autocompletion=complete.task,
        help="hf: models: causal-lm, masked-lm, seq-cls or image-cls (default: from the config's architectures).",
    ),
]
SeqLenOpt = Annotated[
    int | None,
    typer.Option("--seq-len", help="hf: text models: tokens per sample (default: the config's maximum positions)."),
]
TrustRemoteCodeOpt = Annotated[
    bool,
    typer.Option(
        "--trust-remote-code",
        help="hf: models whose config needs the repository's own Python code: run it (with your permissions).",
    ),
]

PlotOpt = Annotated[
    Path | None,
    typer.Option("--plot", help="Also draw the profile's ops on the device's roofline (PNG; needs matplotlib)."),
]


if TYPE_CHECKING:
    from advisor.profiler.schema import Profile


def require_torch(command: str) -> None:
    """Commands that run a model need PyTorch, which the light install leaves out: one line naming the extra."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise UserError(
            f"advisor {command} needs PyTorch, which is not installed",
            'pip install "advisor[torch]" (without a GPU, first the CPU build: '
            "pip install torch --index-url https://download.pytorch.org/whl/cpu)",
        )


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
        code = app(prog_name="advisor", standalone_mode=False)  # also under python -m advisor
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
