"""`advisor validate MODEL`: time real training steps and compare them with the calibrated estimate. MODEL is
anything `advisor profile` takes (a model file, a shipped name, hf:..., timm:..., torchvision:...).

torch is imported inside the command only, so that `advisor --help` stays fast.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from advisor.cli import complete
from advisor.cli.common import (
    DEFAULT_TIMEOUT_S,
    CatalogOpt,
    FormatOpt,
    SeqLenOpt,
    TaskOpt,
    TimeoutOpt,
    TrustRemoteCodeOpt,
    check_timeout,
    note,
    note_oversubscribed,
    require_torch,
)
from advisor.errors import UserError
from advisor.profiler.sources import SPEC_HELP
from advisor.render.output import Format, emit
from advisor.vocab import PRECISIONS


def _table(v) -> None:
    from rich.console import Console
    from rich.table import Table

    from advisor import units

    threads = f", {v.threads} threads" if v.threads else ""
    runs = f", median of {v.runs} runs ({v.run_spread:.0%} apart)" if v.runs > 1 else ""
    t = Table(title=f"{v.model} on {v.device}, batch {v.batch_size}, {v.precision}{threads}{runs}")
    for col in ("phase", "measured", "predicted", "error"):
        t.add_column(col, justify="left" if col == "phase" else "right")
    for r in v.rows:
        t.add_row(r.phase, units.fmt_duration(r.measured_s), units.fmt_duration(r.predicted_s), f"{r.error:+.1%}")
    console = Console()
    console.print(t)
    for line in v.notes:
        console.print(f"note: {line}", highlight=False)


def _fresh_runs(args: list[str], runs: int):
    """`advisor validate ARGS` in `runs` fresh processes one after another, combined (their median): a new
    process starts as a user's training does, with its own allocator state and page faults. A run that fails
    stops the rest, its one-line error passed on with its exit code."""
    import json
    import subprocess

    from advisor.calibration.validate import Validation, combine

    done = []
    for i in range(runs):
        sys.stderr.write(f"  run {i + 1} of {runs}\n")
        cmd = [sys.executable, "-m", "advisor", "validate", *args, "--format", "json"]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            sys.stderr.write(out.stderr)
            raise typer.Exit(out.returncode)
        done.append(Validation.model_validate(json.loads(out.stdout)))
    return combine(done)


def register(app: typer.Typer) -> None:
    @app.command()
    def validate(
        model: Annotated[str, typer.Argument(help=f"What to run: {SPEC_HELP}.", autocompletion=complete.model)],
        device: Annotated[str, typer.Option("--device", help="cpu or cuda.")] = "cpu",
        batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Samples per step.")] = 8,
        precision: Annotated[str, typer.Option("--precision", help=", ".join(PRECISIONS))] = "fp32",
        threads: Annotated[
            int | None, typer.Option("--threads", help="torch threads (CPU); the same as for calibrate.")
        ] = None,
        repeats: Annotated[int, typer.Option("--repeats", help="Timed steps (the median is reported).")] = 7,
        runs: Annotated[
            int,
            typer.Option(
                "--runs",
                help="Fresh processes to time, one after another; the median is reported with their spread (on a "
                "shared machine one process can land 10-40 % off the next).",
            ),
        ] = 1,
        task: TaskOpt = None,
        seq_len: SeqLenOpt = None,
        trust_remote_code: TrustRemoteCodeOpt = False,
        catalog: CatalogOpt = None,
        timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
        fmt: FormatOpt = Format.table,
    ) -> None:
        """Run real training steps and print measured time, predicted time and the error per phase."""
        check_timeout(timeout)
        require_torch("validate")
        if device not in ("cpu", "cuda"):
            raise UserError(f"unknown --device {device!r}", "use cpu or cuda")
        if precision not in PRECISIONS:
            raise UserError(f"unknown --precision {precision!r}", f"use one of {', '.join(PRECISIONS)}")
        if batch_size < 1 or repeats < 1 or runs < 1:
            raise UserError("--batch-size, --repeats and --runs must be at least 1")
        if threads is not None and threads < 1:
            raise UserError(f"--threads must be at least 1, got {threads}")
        from advisor import api
        from advisor.calibration.validate import calibrated_id

        calibrated = None
        from advisor.calibration.validate import validate as run

        cat = api.catalog(catalog)
        if device == "cpu":
            ident = calibrated_id(cat, device)  # before any work: no calibration, one clear line
            calibrated = cat.efficiency[cat.devices[ident].efficiency].calibration_threads
            threads = threads or calibrated
            if calibrated and threads != calibrated:
                note(f"calibrated with {calibrated} threads, timing with {threads}: expect a larger error")
            note_oversubscribed(threads, "each timed step")
        if runs > 1:
            args = [model, "--device", device, "-b", str(batch_size), "--precision", precision]
            args += ["--repeats", str(repeats), "--timeout", str(timeout)]
            args += ["--threads", str(threads)] if threads else []
            args += ["--task", task] if task else []
            args += ["--seq-len", str(seq_len)] if seq_len else []
            args += ["--trust-remote-code"] if trust_remote_code else []
            for path in catalog or []:
                args += ["--catalog", str(path)]
            v = _fresh_runs(args, runs)
            emit(v, fmt, lambda: _table(v))
            return
        import torch

        from advisor.profiler.model_file import user_code
        from advisor.profiler.sources import resolve

        def tick(step: str) -> None:
            sys.stderr.write(f"  {step}\n")

        with user_code(model, timeout):  # the model's code, from its top level to the last timed step
            mf = resolve(model, task=task, seq_len=seq_len, trust_remote_code=trust_remote_code)
            if threads is not None:
                torch.set_num_threads(threads)
            v = run(mf, device, batch_size, precision, repeats, catalog=cat, tick=tick)
        emit(v, fmt, lambda: _table(v))
