"""How much longer a CPU's optimizer step takes inside a training step, right after the backward pass, than run
again straight after itself (its parameters, gradients and state in the cache), by model and batch, against the
estimate on this machine's committed calibration (benchmarks/results/calibration-cpu-<threads>t.yaml).

    python benchmarks/optimizer_in_step.py [--threads 1] [--no-write]

The same parameters at two batches: only what the forward and backward passes touched before the step differs.
Each model in a process of its own, 7 steps after 3 warm-up, medians (the process clock at one thread, else the wall
clock). Appends one line per model and batch to benchmarks/results/optimizer-in-step.csv. The estimate prices the
optimizer's ops as if streamed from memory when the step is large (roofline.reuse_cap) and adds a per-step cold
start measured on AdamW over 1 MiB and over 64 MiB of parameters, gradients and state, the difference per byte of
the model's own (Efficiency.optimizer_step; before 2026-12-07 over 1 MiB alone). Diagnostic only: nothing in
advisor/ reads it.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from vector_in_turn import append, parse  # noqa: E402  (this folder, the script's own, is on the path)

OUT = ROOT / "benchmarks" / "results" / "optimizer-in-step.csv"
CASES = (("resnet", (8, 32)), ("mobilenet", (8, 32)), ("convnext", (8, 32)), ("stemnet", (8, 32)), ("gpt", (4, 16)))
STEPS, WARMUP = 7, 3


def measure(name: str, batch: int, threads: int) -> dict:
    """One model at one batch, in this process: the optimizer phase in the step and again, its estimate, sizes."""
    import torch

    from advisor import api
    from advisor.estimator.roofline import step_bytes
    from advisor.profiler.model_file import load_model_file
    from advisor.profiler.profile import profile_model
    from advisor.profiler.step import PhaseClock, build, train_step

    torch.set_num_threads(threads)
    path = ROOT / "benchmarks" / "models" / f"{name}.py"
    cat = api.catalog([ROOT / "benchmarks" / "results" / f"calibration-cpu-{threads}t.yaml"])
    prof = profile_model(path, batch_size=batch, device="cpu", precision="fp32", repeats=0, faults=False)
    estimate = api.estimate(prof, "local-cpu", precision="fp32", micro_batch=batch, cat=cat)
    now = time.process_time if threads == 1 else time.perf_counter
    clock = PhaseClock(now, "cpu")
    mf = load_model_file(path)
    model, data, opt, _ = build(mf, "cpu", batch, "fp32", None)
    in_step, again = [], []
    for i in range(WARMUP + STEPS):
        train_step(mf, model, data, opt, "cpu", None, clock)
        t0 = now()
        opt.step()
        seconds = now() - t0
        if i >= WARMUP:
            in_step.append(clock.phases()[2])
            again.append(seconds)
    m = prof.memory
    return {
        "in_step_ms": round(statistics.median(in_step) * 1e3, 3),
        "again_ms": round(statistics.median(again) * 1e3, 3),
        "estimated_ms": round(estimate.phases["optimizer"].seconds * 1e3, 3),
        "step_mb": round(step_bytes(prof, batch) / 1e6, 1),
        "optimizer_mb": round((m.parameter_bytes + m.gradient_bytes + m.optimizer_state_bytes) / 1e6, 1),
    }


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--one":
        print(json.dumps(measure(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
        return
    args = parse(__doc__, 1)
    from advisor.profiler.device import cpu_name

    run, lines = dt.datetime.now().strftime("%Y-%m-%dT%H:%M"), []
    for name, batches in CASES:
        for batch in batches:
            cmd = [sys.executable, __file__, "--one", name, str(batch), str(args.threads)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            line = {"run": run, "cpu": cpu_name(), "threads": args.threads, "model": name, "batch": batch, **figures}
            lines.append(line)
            f = figures
            print(
                f"{name:10s} {batch:3d}: in the step {f['in_step_ms']:7.2f} ms, again {f['again_ms']:7.2f} ms, "
                f"estimated {f['estimated_ms']:7.2f} ms; step {f['step_mb']:7.1f} MB, optimizer's data "
                f"{f['optimizer_mb']:6.1f} MB",
                flush=True,
            )
    if not args.no_write:
        append(OUT, lines)


if __name__ == "__main__":
    main()
