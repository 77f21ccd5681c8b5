"""What every command shares: the --format and --catalog options, and turning errors into exit codes."""

from __future__ import annotations

import os
import signal
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


TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout",
        help="Stop the model's code after this many seconds (0: no limit); what it prints goes to stderr.",
    ),
]
DEFAULT_TIMEOUT_S = 1800.0


def check_timeout(timeout: float) -> None:
    import math

    if not (math.isfinite(timeout) and timeout >= 0):
        raise UserError(f"--timeout must be a number of seconds (0: no limit), got {timeout:g}", "e.g. --timeout 600")


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


LoaderWorkers = Annotated[
    int | None,
    typer.Option(
        help="Image-decoding processes per device, the DataLoader's num_workers (default: every vCPU but one per "
        "device). Few workers on a fast GPU leave it waiting."
    ),
]


def parse_run_options(checkpoint_every: str | None, eval_share: float | None, loader_workers: int | None = None):
    """--checkpoint-every (a duration; 0 or 'end': only the final checkpoint), --eval-share (0 to <1) and
    --loader-workers (1 or more)."""
    from advisor import units
    from advisor.estimator.runtime import RunOptions

    every = None
    if checkpoint_every is not None:
        text = checkpoint_every.strip().lower()
        every = 0.0 if text in ("end", "never", "0") else units.parse_positive(text, "duration", "--checkpoint-every")
    if eval_share is not None and not 0 <= eval_share < 1:
        raise UserError(f"--eval-share must be at least 0 and below 1, got {eval_share:g}", "e.g. --eval-share 0.02")
    if loader_workers is not None and loader_workers < 1:
        raise UserError(f"--loader-workers must be at least 1, got {loader_workers}", "e.g. --loader-workers 8")
    return RunOptions(checkpoint_every_s=every, eval_share=eval_share, loader_workers=loader_workers)


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
    """Before any work: matplotlib is there (check_files checks the path)."""
    if path is not None:
        from advisor.render.plots import require_matplotlib

        require_matplotlib()


def plot_roofline(path: Path, profile: Profile, device, cat, precision: str, batch: int | None = None) -> None:
    from advisor.render.plots import roofline_png

    roofline_png(profile, device, cat.efficiency[device.efficiency], precision, path, batch=batch)
    note(f"roofline plot written to {path}")


def check_files(
    outputs: dict[str, Path | None],
    inputs: dict[str, Path | list[Path] | None] | None = None,
    catalog: list[Path] | None | bool = False,
) -> None:
    """Before any work: every output can be written, no two outputs are one file, and no output is one of
    the command's inputs (`inputs`, and with `catalog` not False the catalog overlays it would read).

    `outputs` and `inputs` map what the user typed ('--export', 'the profile') to a path (or paths) or None."""
    from advisor.io import check_writable, same_file

    named = []
    for what, paths in (inputs or {}).items():
        named += [(what, Path(p)) for p in (paths if isinstance(paths, list) else [paths]) if p is not None]
    if catalog is not False:
        named += [("the catalog overlay", p) for p in _overlay_files(catalog or None)]
    seen: list[tuple[str, Path]] = []
    for what, path in outputs.items():
        if path is None:
            continue
        check_writable(path, what)
        for other, taken in seen + named:
            if same_file(path, taken):
                hint = "advisor never writes over a file it reads or writes twice; choose another path"
                if other == "the catalog overlay":
                    hint += " (to regenerate an overlay, leave it out: ADVISOR_CATALOG= advisor ...)"
                raise UserError(f"{what} {path} is the same file as {other} {taken}", hint)
        seen.append((what, Path(path)))


def check_default_output(path: Path, begins: bytes = b"schema_version:", what: str = "an advisor profile") -> None:
    """An output path the user did not name may replace only a file advisor wrote there before."""
    from advisor.io import starts_with

    if os.path.lexists(path) and not starts_with(path, begins):
        raise UserError(
            f"{path} exists and is not {what}; advisor will not replace it unasked",
            "name the output with -o PATH, or move that file",
        )


def _overlay_files(extra: list[Path] | None) -> list[Path]:
    """The files of every catalog overlay a command would read (folders expanded; unreadable ones skipped:
    the catalog loader reports them)."""
    from advisor.catalog.load import overlay_paths, yaml_files

    files: list[Path] = []
    for overlay in overlay_paths(extra):
        try:
            files += yaml_files(overlay)
        except (UserError, OSError):
            continue
    return files


def fail(message: str, code: int = 2) -> None:
    sys.stderr.write(f"error: {message}\n")
    raise SystemExit(code)


_caught: list[int] = []  # the signal that stopped the command, when one did


def _on_signal(signum: int, frame) -> None:
    _caught.append(signum)
    raise KeyboardInterrupt


def _interrupted() -> None:
    """One line after Ctrl-C (exit 130) or SIGTERM (exit 143): what was written before it, if anything."""
    from advisor.io import WRITTEN

    term = bool(_caught) and _caught[-1] == getattr(signal, "SIGTERM", None)
    done = f"only {', '.join(WRITTEN)} written" if WRITTEN else "nothing written"
    fail(f"{'terminated' if term else 'interrupted'}; {done}", 143 if term else 130)


def run_app(app: typer.Typer) -> None:
    """Run the typer app: user errors become one line and exit code 2, bugs exit 1 with a short report,
    Ctrl-C and SIGTERM one line and exit codes 130 and 143."""
    from advisor.io import WRITTEN

    WRITTEN.clear()
    _caught.clear()
    signals = [getattr(signal, n) for n in ("SIGINT", "SIGTERM") if hasattr(signal, n)]
    previous = {s: signal.signal(s, _on_signal) for s in signals}
    try:
        _run(app)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _run(app: typer.Typer) -> None:
    try:
        code = app(prog_name="advisor", standalone_mode=False)  # also under python -m advisor
        if code == 130:  # typer turns KeyboardInterrupt into exit code 130, without a word
            _interrupted()
        if isinstance(code, int) and code:
            raise SystemExit(code)
    except UserError as exc:
        fail(exc.line())
    except SystemExit:
        raise
    except KeyboardInterrupt:
        _interrupted()
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


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity where the OS tells it, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def note_oversubscribed(threads: int | None, what: str) -> None:
    """A note where `threads` torch threads are more than the usable cores: they take turns on the cores, so the
    work `what` times runs slower than at one thread a core, which estimates take every thread to have."""
    cores = usable_cores()
    if threads and threads > cores:
        note(
            f"{threads} threads on {cores} CPU cores: the threads take turns on the cores, so {what} runs slower "
            f"than at one thread a core; give --threads {cores} or fewer"
        )
