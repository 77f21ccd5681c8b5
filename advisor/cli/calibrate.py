"""`advisor calibrate`: measure this machine's CPU (or GPU) and write it as a catalog device.

The overlay lands in the user's catalog folder by default, so `--hardware local-cpu` works at once.
torch is imported inside the command only, so that `advisor --help` stays fast.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from advisor.cli.common import FormatOpt, check_files, note, require_torch
from advisor.errors import UserError
from advisor.io import dump_yaml, write_atomic
from advisor.render.output import Format, emit

DEVICES = ("cpu", "cuda")


def summary(data: dict, path: Path, seconds: float) -> dict:
    """What the table shows, as data (the --format json/yaml output)."""
    dev, eff = data["devices"][0], data["efficiency"][0]
    return {
        "device": dev["id"],
        "name": dev["name"],
        "written_to": str(path),
        "calibration_s": round(seconds, 2),
        "matmul_peak_flops": {k: float(v) for k, v in dev["matrix_flops"].items()},
        "memory_bandwidth": float(dev["memory_bandwidth"]),
        "vector_efficiency": eff["vector"],
        "op_overhead_s": {k: float(v) for k, v in eff.get("phase_overhead_s", {}).items()},
        "source": dev["source"],
        "as_of": dev["as_of"],
    }


def _table(s: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    from advisor import units

    t = Table(title=f"{s['name']} -> {s['device']}", show_header=True)
    t.add_column("measured")
    t.add_column("value", justify="right")
    for dtype, rate in s["matmul_peak_flops"].items():
        t.add_row(f"matmul peak ({dtype})", units.fmt_flops(rate))
    t.add_row("memory bandwidth (best size)", units.fmt_bandwidth(s["memory_bandwidth"]))
    t.add_row("vector efficiency (gelu)", f"{s['vector_efficiency']:.3f}")
    for phase, sec in s["op_overhead_s"].items():
        t.add_row(f"overhead per op ({phase})", units.fmt_duration(sec))
    t.add_row("calibration time", units.fmt_duration(s["calibration_s"]))
    Console().print(t)
    print(f"wrote {s['written_to']}; use it as --hardware {s['device']}")


def register(app: typer.Typer) -> None:
    @app.command()
    def calibrate(
        device: Annotated[str, typer.Option("--device", help="cpu, or cuda (the first GPU).")] = "cpu",
        output: Annotated[
            Path | None,
            typer.Option(
                "--output",
                "-o",
                help="Overlay YAML to write [default: "
                "$XDG_CONFIG_HOME/advisor/catalog/local-<device>.yaml, loaded automatically].",
            ),
        ] = None,
        threads: Annotated[
            int | None, typer.Option("--threads", help="torch threads (CPU); use the same for validate.")
        ] = None,
        quick: Annotated[bool, typer.Option("--quick", help="Fewer sizes, shorter timing (a smoke test).")] = False,
        fmt: FormatOpt = Format.table,
    ) -> None:
        """Measure matmul, memory bandwidth, elementwise work and per-op overhead of this machine (≤ 60 s)."""
        require_torch("calibrate")
        if device not in DEVICES:
            raise UserError(f"unknown --device {device!r}", "use cpu or cuda")
        if threads is not None and threads < 1:
            raise UserError(f"--threads must be at least 1, got {threads}")
        check_files({"--output": output})
        import torch

        from advisor.calibration import bench, overlay

        if device == "cuda" and not torch.cuda.is_available():
            raise UserError("--device cuda: no CUDA GPU is visible to torch", "use --device cpu")
        if threads is not None:
            torch.set_num_threads(threads)
        start = time.perf_counter()

        def tick(step: str) -> None:
            sys.stderr.write(f"  [{time.perf_counter() - start:5.1f} s] {step}\n")

        m = bench.run(device, quick=quick, tick=tick)
        if quick:
            phase = {}
        else:
            phase = overlay.fit_phase_overhead(overlay.build(m), m, tick)
        m.seconds = time.perf_counter() - start
        data = overlay.build(m, phase)
        overlay.models(data)  # validate before writing anything
        path = output or overlay.default_path(m)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, "# written by advisor calibrate; rerun it to refresh\n" + dump_yaml(data), "calibration")
        s = summary(data, path, m.seconds)
        if device == "cuda":
            note("the CUDA path was written without a GPU to test it on: check the figures")
        emit(s, fmt, lambda: _table(s))
