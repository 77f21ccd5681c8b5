"""`advisor profile MODEL`: count one training step of a model and save its profile. MODEL is a model file, a
shipped model's name, hf:ID or hf:PATH/config.json, timm:NAME or torchvision:NAME (advisor/profiler/sources/).

torch is imported inside the command only, so that `advisor --help` stays fast.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from advisor.cli import complete
from advisor.cli.common import (
    DEFAULT_TIMEOUT_S,
    CatalogOpt,
    FormatOpt,
    PlotOpt,
    SeqLenOpt,
    TaskOpt,
    TimeoutOpt,
    TrustRemoteCodeOpt,
    WideOpt,
    check_default_output,
    check_files,
    check_plot,
    check_timeout,
    note,
    plot_roofline,
    require_torch,
)
from advisor.errors import UserError
from advisor.io import check_writable
from advisor.profiler.sources import SPEC_HELP
from advisor.render.output import Format, emit
from advisor.vocab import OPTIMIZERS, PRECISIONS, PROFILE_DEVICES, check_choice

TOP = 8


def summary(profile: Any, path: Path | None) -> dict:
    """What the table shows, as data (the --format json/yaml output)."""
    b = profile.batch_size
    mem = profile.memory

    def top(key) -> list[dict]:
        ops = sorted(profile.ops, key=key, reverse=True)[:TOP]
        return [
            {
                "op": o.op,
                "phase": o.phase,
                "module": o.module,
                "dtype": o.dtype,
                "count": o.count,
                "shapes": o.shapes,
                "flops": o.flops.at(b),
                "bytes": o.bytes_read.at(b) + o.bytes_written.at(b),
            }
            for o in ops
        ]

    return {
        "profile": str(path) if path else None,
        "name": profile.name,
        "made_from": profile.made_from(),
        "source": profile.source.model_dump(exclude_none=True) if profile.source else None,
        "device": profile.device,
        "precision": profile.precision,
        "optimizer": profile.optimizer,
        "batch_size": b,
        "parameters": profile.parameters,
        "tokens_per_sample": profile.tokens_per_sample,
        "global_batch": profile.global_batch,
        "global_batch_source": profile.global_batch_source,
        "linear_in_batch": profile.linear_in_batch,
        "flops": {ph: profile.flops(b, ph) for ph in ("forward", "backward", "optimizer")}
        | {"total": profile.flops(b)},
        "bytes": {ph: profile.bytes(b, ph) for ph in ("forward", "backward", "optimizer")}
        | {"total": profile.bytes(b)},
        "memory": {
            "parameters": mem.parameter_bytes,
            "gradients": mem.gradient_bytes,
            "optimizer_state": mem.optimizer_state_bytes,
            "activations": mem.activation_bytes.at(b),
            "temporaries": mem.temporary_peak_bytes.at(b),
            "peak": mem.peak_bytes.at(b),
            "measured_peak": mem.measured_peak_bytes,
            "faulted_per_step": max(0.0, mem.step_fault_bytes.at(b)) if mem.step_fault_bytes else None,
        },
        "step_time_s": profile.timing.step_time_s if profile.timing else None,
        "top_by_flops": top(lambda o: o.flops.at(b)),
        "top_by_bytes": top(lambda o: o.bytes_read.at(b) + o.bytes_written.at(b)),
        "uncounted_ops": profile.uncounted_ops,
    }


def _table(data: dict, wide: bool = False) -> None:
    from rich.table import Table

    from advisor.render.columns import make_console
    from advisor.units import fmt_bytes, fmt_count, fmt_duration

    def flops(x: float) -> str:
        return fmt_count(x) + "FLOP" if x >= 1000 else f"{x:.0f} FLOP"

    con = make_console()
    t = Table(
        title=f"{data['name']}: batch {data['batch_size']}, {data['precision']}, {data['optimizer']}, "
        f"on {data['device']}",
        show_header=True,
    )
    for col in ("", "forward", "backward", "optimizer", "total"):
        t.add_column(col, justify="right" if col else "left")
    t.add_row("FLOPs", *(flops(data["flops"][k]) for k in ("forward", "backward", "optimizer", "total")))
    t.add_row("bytes", *(fmt_bytes(data["bytes"][k]) for k in ("forward", "backward", "optimizer", "total")))
    con.print(t)
    m = Table(title="memory", show_header=False)
    m.add_column("")
    m.add_column("", justify="right")
    labels = {
        "parameters": "parameters",
        "gradients": "gradients",
        "optimizer_state": "optimizer state",
        "activations": "activations (saved)",
        "temporaries": "temporaries",
        "peak": "peak",
        "measured_peak": "measured peak (CUDA)",
        "faulted_per_step": "faulted in per step (fresh processes)",
    }
    for key, label in labels.items():
        if data["memory"].get(key) is not None:
            m.add_row(label, fmt_bytes(data["memory"][key]))
    con.print(m)
    from advisor.render.columns import Col, print_table, tail

    cols = (
        Col("op", shorten=tail, min_width=12),
        Col("phase", priority=3),
        Col("module", priority=2, shorten=tail, min_width=10),
        Col("dtype", priority=4),
        Col("calls", priority=5, right=True, keep=True),
        Col("FLOPs", right=True, keep=True),
        Col("bytes", right=True, keep=True),
    )
    for key, title in (("top_by_flops", "top ops by FLOPs"), ("top_by_bytes", "top ops by bytes")):
        rows = [
            [
                r["op"].removeprefix("aten."),
                r["phase"],
                r["module"] or "-",
                r["dtype"],
                str(r["count"]),
                flops(r["flops"]),
                fmt_bytes(r["bytes"]),
            ]
            for r in data[key]
        ]
        print_table(con, f"{title} (aten ops)", cols, rows, wide)
    extra = f"parameters {fmt_count(data['parameters'])}"
    if data["tokens_per_sample"]:
        extra += f", {data['tokens_per_sample']} tokens per sample"
    if data["global_batch"]:
        extra += f", global batch {data['global_batch']:,} (GLOBAL_BATCH)"
    if data["step_time_s"]:
        extra += f", measured step {fmt_duration(data['step_time_s'])}"
    con.print(extra + (f"; profile written to {data['profile']}" if data["profile"] else ""))
    con.print(f"made from {data['made_from']}", soft_wrap=True, highlight=False)


def default_output(name: str) -> Path:
    """./profiles/NAME.yaml under the working folder; never advisor's own shipped profiles (an editable
    install run from the repository would otherwise write a user's profile among the reference ones)."""
    from advisor.api import shipped_profiles_dir

    path = Path.cwd() / "profiles" / f"{name}.yaml"
    if path.parent.resolve() == shipped_profiles_dir().resolve():
        raise UserError(
            f"the default output folder {path.parent} is advisor's shipped profiles folder",
            "give -o PATH (or run from another folder); reference profiles are made by profiles/regenerate.py",
        )
    return path


class _Progress:
    """A progress bar on stderr for people (nothing when stderr is not a terminal)."""

    STAGES = 8  # 2 batch sizes x (build, forward, backward, optimizer), then timing

    def __init__(self) -> None:
        self.bar = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.task = self.bar.add_task("profiling", total=self.STAGES + 1)

    def __enter__(self):
        if self.bar:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self.bar:
            self.bar.__exit__(*exc)

    def __call__(self, stage: str) -> None:
        if self.bar:
            self.bar.update(self.task, advance=1, description=f"profiling: {stage}")


def register(app: typer.Typer) -> None:
    @app.command("profile")
    def profile_cmd(
        model: Annotated[str, typer.Argument(help=f"What to profile: {SPEC_HELP}.", autocompletion=complete.model)],
        batch_size: Annotated[
            int | None,
            typer.Option("--batch-size", "-b", help="Samples per step (default: a shipped model's own, else 8)."),
        ] = None,
        device: Annotated[
            str,
            typer.Option(
                help="auto (a local GPU, else the CPU), cuda, cpu, or meta (counts without allocating anything)."
            ),
        ] = "auto",
        precision: Annotated[str, typer.Option(help="fp32, tf32, bf16-mixed, fp16-mixed or bf16.")] = "fp32",
        optimizer: Annotated[
            str | None, typer.Option(help="adamw, adam or sgd (default: the file's make_optimizer, else adamw).")
        ] = None,
        name: Annotated[str | None, typer.Option(help="Profile name (default: the model's name).")] = None,
        output: Annotated[
            Path | None,
            typer.Option(
                "--output", "-o", help="Where to write the profile (default: ./profiles/NAME.yaml in this folder)."
            ),
        ] = None,
        plot: PlotOpt = None,
        plot_hardware: Annotated[
            str | None,
            typer.Option(
                autocompletion=complete.hardware,
                help="Device or instance whose roofline --plot draws (default: the profiling device, when the "
                "catalog knows it).",
            ),
        ] = None,
        task: TaskOpt = None,
        seq_len: SeqLenOpt = None,
        trust_remote_code: TrustRemoteCodeOpt = False,
        catalog: CatalogOpt = None,
        timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
        fmt: FormatOpt = Format.table,
        wide: WideOpt = False,
    ) -> None:
        """Count FLOPs, bytes and memory of one training step of MODEL and save its profile."""
        check_timeout(timeout)
        require_torch("profile")
        check_choice(device, PROFILE_DEVICES, "--device")
        check_choice(precision, PRECISIONS, "--precision")
        check_choice(optimizer, OPTIMIZERS, "--optimizer")
        if batch_size is not None and batch_size < 1:
            raise UserError(f"--batch-size must be at least 1, got {batch_size}")
        given = Path(model) if Path(model).exists() else None  # a model file (hf: and the like name none)
        check_files({"--output": output, "--plot": plot}, {"the model file": given}, catalog if plot else False)
        from advisor.profiler.model_file import user_code
        from advisor.profiler.sources import resolve

        started = time.monotonic()  # one limit for all of the model's code
        with user_code(model, timeout, started):  # a model file's own top-level code runs here
            mf = resolve(model, task=task, seq_len=seq_len, trust_remote_code=trust_remote_code)
        batch_size = batch_size or getattr(mf, "default_batch_size", None) or 8
        path = output or default_output(name or getattr(mf, "name", "") or mf.path.stem)
        if output is None and not path.parent.exists():
            check_writable(path.parent, "profile")  # profiles/ will be created in a writable folder
        else:  # again now that the model file is known (a shipped name's file; the default path)
            if output is None:
                check_default_output(path)  # never over a file advisor did not write
            check_files({"--output" if output else "the profile": path, "--plot": plot}, {"the model file": mf.path})
        check_plot(plot)
        if plot is not None and plot_hardware is None and device == "meta":
            raise UserError(
                "--plot on the meta device needs --plot-hardware NAME (meta has no roofline)",
                "e.g. --plot-hardware h100-sxm",
            )
        if plot is not None and plot_hardware is not None:
            from advisor import api

            api.resolve_hardware(api.catalog(catalog), plot_hardware)  # an unknown name fails before the work

        from advisor.profiler.model_file import InternalError
        from advisor.profiler.profile import profile_model
        from advisor.profiler.schema import save_profile

        try:
            with _Progress() as tick, user_code(model, timeout, started):
                prof = profile_model(mf, batch_size, device, precision, optimizer, name, tick=tick)
        except InternalError as exc:
            raise RuntimeError(str(exc)) from exc
        path.parent.mkdir(parents=True, exist_ok=True)
        save_profile(prof, path)
        if prof.uncounted_ops:
            note(
                f"{len(prof.uncounted_ops)} op(s) have no FLOP formula and count 0 FLOPs: "
                f"{', '.join(prof.uncounted_ops[:6])}"
            )
        if not prof.linear_in_batch:
            note(f"cost is not linear in the batch size: {prof.linear_reason}")
        if plot is not None:
            _plot(plot, prof, plot_hardware, catalog)
        data = summary(prof, path)
        emit(data, fmt, lambda: _table(data, wide))


def _plot(path: Path, prof: Any, hardware: str | None, catalog: list[Path] | None) -> None:
    from advisor import api

    cat = api.catalog(catalog)
    hardware = hardware or (prof.timing.catalog_device if prof.timing else None)
    if hardware is None:
        note(
            "--plot skipped: the profiling device is not in the catalog; give --plot-hardware NAME "
            "(the profile is saved)"
        )
        return
    device = api.resolve_hardware(cat, hardware)[0]
    plot_roofline(path, prof, device, cat, prof.precision, prof.batch_size)
