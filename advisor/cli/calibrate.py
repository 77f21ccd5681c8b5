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

from advisor.cli.common import FormatOpt, check_files, note, note_oversubscribed, require_torch
from advisor.errors import UserError
from advisor.render.output import Format, emit

DEVICES = ("cpu", "cuda")
MAX_SPREAD_S = 3600.0  # an hour between sweeps at most: beyond it a typo, not a plan


def summary(data: dict, path: Path, seconds: float, kept: str | None = None) -> dict:
    """What the table shows, as data (the --format json/yaml output)."""
    dev, eff = data["devices"][0], data["efficiency"][0]
    module = eff.get("module_overhead_s")
    return {
        "device": dev["id"],
        "name": dev["name"],
        "written_to": str(path),
        "replaced_existing": kept is None,
        "calibration_s": round(seconds, 2),
        "threads": eff.get("calibration_threads"),
        "matmul_peak_flops": {k: float(v) for k, v in dev["matrix_flops"].items()},
        "memory_bandwidth": float(dev["memory_bandwidth"]),
        "vector_efficiency": eff["vector"],
        "op_overhead_s": {k: float(v) for k, v in eff.get("phase_overhead_s", {}).items()},
        "module_overhead_s": float(module) if module else None,
        "first_touch_bandwidth": float(eff["first_touch_bandwidth"]) if eff.get("first_touch_bandwidth") else None,
        "parallel_op_s": [float(t) for t in eff.get("parallel_op_s") or []] or None,
        "conv_channel_block": eff.get("conv_channel_block"),
        # oneDNN's layout reorders around a convolution (Efficiency.conv_reorder): bytes per second of a pass at the
        # smallest and the largest measured size, channels on the block and padded
        "conv_reorder_rate": {
            kind: [float(st["efficiency"]) * float(dev["memory_bandwidth"]) for st in (steps[0], steps[-1])]
            for kind, steps in (eff.get("conv_reorder") or {}).items()
        }
        or None,
        # the least share of its rate an op keeps when another core wrote its input (Efficiency.handoff)
        "handoff_min_fraction": min((st["efficiency"] for st in eff.get("handoff") or []), default=None),
        # the least share of the streaming rate an op's bytes keep run in turn with a step's others (vector_in_turn)
        "in_turn_min_fraction": min((st["efficiency"] for st in eff.get("vector_in_turn") or []), default=None),
        # the rate a step's ops write fresh outputs, in the smallest and the largest step measured (fresh_output)
        "fresh_output_rate": [float(st["efficiency"]) * float(dev["memory_bandwidth"]) for st in (fresh[0], fresh[-1])]
        if (fresh := eff.get("fresh_output"))
        else None,
        "gemm_bias_passes": eff.get("gemm_bias_passes"),
        "gemm_output_passes": eff.get("gemm_output_passes"),
        "pool_window_s": {op: w["seconds_per_flop"] for op, w in eff.get("op_window", {}).items()} or None,
        # the optimizer's fixed cost per step after the smallest and the largest traffic (Efficiency.optimizer_step)
        "optimizer_step_s": [float(pt["seconds"]) for pt in eff.get("optimizer_step") or []] or None,
        # and per MB of its data (parameters, gradients, state) after the largest traffic
        "optimizer_step_s_per_mb": 1e6 * float((eff.get("optimizer_step") or [{}])[-1].get("seconds_per_byte", 0.0))
        or None,
        "draw_half_ratio": dict(eff.get("draw_half_ratio") or {}) or None,
        # a copy between layouts against a plain one, by its runs (Efficiency.permuted_copy)
        "permuted_copy": [{"run": int(p["run"]), "ratio": float(p["ratio"])} for p in eff.get("permuted_copy") or []]
        or None,
        # a recurrent layer run step by step: per op of its C++ loop and per call (Efficiency.loop_op_s)
        "loop_op_s": float(eff["loop_op_s"]) if eff.get("loop_op_s") is not None else None,
        "loop_call_s": float(eff["loop_call_s"]) if eff.get("loop_call_s") is not None else None,
        "warnings": list(eff.get("calibration_warnings", [])),
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
    if s["module_overhead_s"]:
        t.add_row("overhead per module call", units.fmt_duration(s["module_overhead_s"]))
    if s["first_touch_bandwidth"]:
        t.add_row("fresh pages from the OS (first touch)", units.fmt_bandwidth(s["first_touch_bandwidth"]))
    if s["fresh_output_rate"]:
        small, large = s["fresh_output_rate"]
        t.add_row(
            "fresh outputs in turn, small - large step", f"{units.fmt_bandwidth(small)} - {units.fmt_bandwidth(large)}"
        )
    if s["conv_channel_block"]:
        t.add_row("convolution channel block", f"{s['conv_channel_block']} channels")
    if s["conv_reorder_rate"]:  # NCHW <-> blocked, from the caches down to memory
        rates = ", ".join(
            f"{kind} {units.fmt_bandwidth(small)} - {units.fmt_bandwidth(large)}"
            for kind, (small, large) in s["conv_reorder_rate"].items()
        )
        t.add_row("convolution layout reorders, small - large", rates)
    max_pool = (s["pool_window_s"] or {}).get("aten.max_pool2d_with_indices")
    if max_pool is not None:  # the largest of the window costs on a CPU, and the one most models pay
        t.add_row("max pooling, per window element beyond 2x2/2", f"{max_pool * 1e9:.3g} ns")
    if s["optimizer_step_s"]:
        low, high = (units.fmt_duration(x) for x in (s["optimizer_step_s"][0], s["optimizer_step_s"][-1]))
        t.add_row("optimizer per step, warm - after a full cache", f"{low} - {high}")
    if s["optimizer_step_s_per_mb"]:
        per_mb = units.fmt_duration(s["optimizer_step_s_per_mb"])
        t.add_row("optimizer after a full cache, per MB of its data", per_mb)
    if s["loop_op_s"] is not None:
        call = units.fmt_duration(s["loop_call_s"] or 0.0)
        t.add_row("recurrent layer: per op of its loop, per call", f"{units.fmt_duration(s['loop_op_s'])}, {call}")
    if s["draw_half_ratio"]:
        ratios = ", ".join(f"{op.removeprefix('aten.')} {r:.2f}x" for op, r in s["draw_half_ratio"].items())
        t.add_row("random draws at p = 0.5 (against 0.9)", ratios)
    if s["permuted_copy"]:
        ratios = ", ".join(f"{p['run']} {p['ratio']:.2f}x" for p in s["permuted_copy"])
        t.add_row("copy between layouts, by run (floats)", ratios)
    if s["parallel_op_s"]:  # the threads' state: validate compares its own probes with these
        low, high = min(s["parallel_op_s"]), max(s["parallel_op_s"])
        shown = units.fmt_duration(low) if low == high else f"{units.fmt_duration(low)} - {units.fmt_duration(high)}"
        t.add_row("small parallel op (threads' state)", shown)
    if s["handoff_min_fraction"] is not None:
        t.add_row("input from another core, worst size", f"{s['handoff_min_fraction']:.2f} of the rate")
    if s["gemm_bias_passes"] is not None:
        t.add_row("linear layer's bias (passes over its output)", f"{s['gemm_bias_passes']:.2f}")
    if s["gemm_output_passes"] is not None:
        t.add_row("GEMM's fresh output (passes over it)", f"{s['gemm_output_passes']:.2f}")
    if s["in_turn_min_fraction"] is not None:
        t.add_row("vector ops in turn, worst size", f"{s['in_turn_min_fraction']:.2f} of the streaming rate")
    if s["threads"]:
        t.add_row("torch threads", str(s["threads"]))
    t.add_row("calibration time", units.fmt_duration(s["calibration_s"]))
    Console().print(t)
    if s["replaced_existing"]:
        print(f"wrote {s['written_to']}; use it as --hardware {s['device']}")
    else:
        print(f"wrote {s['written_to']} (not used: the earlier calibration stays in place)")


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
        force: Annotated[
            bool, typer.Option("--force", help="Replace the calibration in place even if this run looks disturbed.")
        ] = False,
        attempts: Annotated[
            int,
            typer.Option(
                "--attempts",
                help="Measure again while a run looks disturbed, up to this many runs; the cleanest is kept.",
            ),
        ] = 2,
        sweeps: Annotated[
            int | None,
            typer.Option(
                "--sweeps",
                help="Measure every size this many times, one sweep after another, and keep each point's median "
                "[default: 3 on a CPU, 1 on a GPU].",
            ),
        ] = None,
        spread: Annotated[
            float,
            typer.Option(
                "--spread",
                help="Wait this many seconds after each sweep, so that the sweeps sample a shared machine's slow "
                "and fast spells (minutes long) rather than one of them; the medians are kept as ever (the waits do "
                "not count in the calibration's time).",
            ),
        ] = 0.0,
        fmt: FormatOpt = Format.table,
    ) -> None:
        """Measure matmul, memory bandwidth, vector ops and per-op overhead of this machine (a few minutes)."""
        require_torch("calibrate")
        if device not in DEVICES:
            raise UserError(f"unknown --device {device!r}", "use cpu or cuda")
        if threads is not None and threads < 1:
            raise UserError(f"--threads must be at least 1, got {threads}")
        if attempts < 1:
            raise UserError(f"--attempts must be at least 1, got {attempts}")
        if sweeps is not None and sweeps < 1:
            raise UserError(f"--sweeps must be at least 1, got {sweeps}")
        if not 0 <= spread <= MAX_SPREAD_S:
            raise UserError(f"--spread must be between 0 and {MAX_SPREAD_S:.0f} seconds, got {spread:g}")
        from advisor.calibration.bench import SWEEPS

        count = sweeps or (1 if quick or device == "cuda" else SWEEPS)
        if spread > 0 and count < 2:
            raise UserError("--spread waits between sweeps, and this run has one", "add --sweeps 2 or more")
        check_files({"--output": output})
        if device == "cpu":
            note_oversubscribed(threads, "every measurement")
        import torch

        from advisor.calibration import overlay, session

        if device == "cuda" and not torch.cuda.is_available():
            raise UserError("--device cuda: no CUDA GPU is visible to torch", "use --device cpu")
        if threads is not None:
            torch.set_num_threads(threads)
        start = time.perf_counter()

        def tick(step: str) -> None:
            sys.stderr.write(f"  [{time.perf_counter() - start:5.1f} s] {step}\n")

        def wait(i: int) -> None:
            if i + 1 < count:  # nothing to wait for after the last
                tick(f"waiting {spread:g} s after sweep {i + 1} of {count} (--spread)")
                time.sleep(spread)

        between = wait if spread > 0 else None
        runs = 1 if quick else attempts
        data, m = session.calibrate(device, quick=quick, tick=tick, attempts=runs, sweeps=sweeps, between=between)
        written, kept = session.save(data, output or overlay.default_path(m), force=force)
        for warning in m.warnings:
            note(f"calibration looks disturbed: {warning}")
        if m.warnings:
            note("rerun when the machine is quiet (nothing else running) for figures you can rely on")
        if kept:
            note(f"kept the calibration in place: {kept}; this run went to {written} (--force replaces it)")
        s = summary(data, written, m.seconds, kept)
        emit(s, fmt, lambda: _table(s))
