"""How far apart the fitted fixed costs per op land when the tiny nets are timed once and when their median over
the calibration's sweeps is fitted: CPU calibrations (bench.run, as `advisor calibrate` measures) one after
another, and in each the fixed costs (fit.fit_overheads) fitted on every sweep's timing of the nets alone, as
calibrations did before each sweep timed them, and on the median of every three sweeps, as `--sweeps 3` now does.

    python benchmarks/overhead_spread.py [--threads 1] [--calibrations 2] [--sweeps 5] [--no-write]

Appends one line per calibration and fit to benchmarks/results/overhead-spread.csv (under this run's start time)
and prints, for the forward and backward cost per op, the range ((largest - smallest) / median) over every
fit of each kind in this run. The optimizer's cost per op is measured apart on a CPU (fit.optimizer_overheads).
About 4 minutes a calibration at one thread with five sweeps.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import itertools
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "benchmarks" / "results" / "overhead-spread.csv"
PHASES = ("forward", "backward")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--calibrations", type=int, default=2)
    parser.add_argument("--sweeps", type=int, default=5, help="sweeps per calibration (at least 3)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.sweeps < 3:
        parser.error("--sweeps must be at least 3 (the median fits take three sweeps)")

    import torch

    from advisor.calibration import bench, fit, overlay
    from advisor.io import write_csv

    torch.set_num_threads(args.threads)
    run = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M")
    rows = []
    for c in range(args.calibrations):
        with bench.held_heap("cpu"):
            m = bench.run("cpu", sweeps=args.sweeps, tick=lambda s: print(f"  {s}", file=sys.stderr))
            data = overlay.build(m)
            fits = [(f"sweep {i + 1}", "one", [steps]) for i, steps in enumerate(m.tiny_steps)]
            for trio in itertools.combinations(range(len(m.tiny_steps)), 3):
                label = "median of " + ",".join(str(i + 1) for i in trio)
                fits.append((label, "median", [m.tiny_steps[i] for i in trio]))
            for label, kind, sweeps in fits:
                per_op, _, _ = fit.fit_overheads(
                    data, "cpu", args.threads, m.dispatch_s, m.module_overhead_s, sweeps=sweeps
                )
                rows.append(
                    {
                        "run": run,
                        "threads": args.threads,
                        "calibration": c,
                        "fit": label,
                        "kind": kind,
                        **{f"{p}_us": f"{per_op[p] * 1e6:.4g}" for p in PHASES},
                    }
                )
        print(f"calibration {c + 1} of {args.calibrations} done", file=sys.stderr)
    for kind, what in (("one", "one sweep's timing"), ("median", "the median of three sweeps")):
        pool = [r for r in rows if r["kind"] == kind]
        for p in PHASES:
            values = [float(r[f"{p}_us"]) for r in pool]
            mid = statistics.median(values)
            print(
                f"{p:8s} per op, {what:27s}: {min(values):.2f}-{max(values):.2f} µs over {len(values)} fits, "
                f"range {(max(values) - min(values)) / mid:.0%} of the median {mid:.2f} µs"
            )
    if not args.no_write:
        kept = list(csv.DictReader(OUT.open())) if OUT.is_file() else []
        write_csv(OUT, kept + rows, "overhead spread")


if __name__ == "__main__":
    main()
