"""How far apart repeated CPU calibrations put the same estimates: calibrations one after another, alternating
between one sweep of the measurements and bench.SWEEPS sweeps (each point's median, calibrate's default), and
every row of benchmarks/accuracy.py estimated on each.

    python benchmarks/calibration_spread.py [--threads 2] [--pairs 3] [--no-write]

Per row and per sweep count: the range of the step estimates over the calibrations ((largest - smallest) /
median). Nothing is timed on the models themselves: the spread is the calibration's alone. Appends to
benchmarks/results/calibration-spread.csv (one line per row, calibration and sweep count, under this run's start
time) and prints the ranges of this run and, per sweep count, the median range per row over every run there:
the machine is quieter at some times than at others, so one run of three pairs says little.
About 12 minutes at two threads with three pairs.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

OUT = ROOT / "benchmarks" / "results" / "calibration-spread.csv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=3, help="calibrations of each kind")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    import accuracy
    import torch

    from advisor import api
    from advisor.calibration import bench, session
    from advisor.io import dump_yaml, write_atomic, write_csv

    torch.set_num_threads(args.threads)
    cases = accuracy.CASES
    profiles = {(name, batch): accuracy.profile(name, batch) for _, name, batch in cases}
    sweeps = (1, bench.SWEEPS)
    run = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            for passes in sweeps:
                start = time.perf_counter()
                data, m = session.calibrate("cpu", attempts=1, sweeps=passes)
                path = Path(tmp) / f"calibration-{passes}-{i}.yaml"
                write_atomic(path, dump_yaml(data), "calibration")
                cat = api.catalog([path])
                print(f"{passes} sweep(s), calibration {i + 1}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
                for split, name, batch in cases:
                    est = api.estimate(
                        profiles[(name, batch)], "local-cpu", precision="fp32", micro_batch=batch, cat=cat
                    )
                    rows.append(
                        {
                            "run": run,
                            "set": split,
                            "model": name,
                            "batch": batch,
                            "threads": args.threads,
                            "sweeps": passes,
                            "calibration": i,
                            "calibration_s": round(m.seconds, 1),
                            "estimate_s": f"{est.step_time_s:.6g}",
                        }
                    )
    kept = list(csv.DictReader(OUT.open())) if OUT.is_file() and not args.no_write else []
    earlier = [r for r in kept if r.get("threads") == str(args.threads)]
    print(f"{'set':7s} {'model':12s} {'batch':>5s}  " + "  ".join(f"{s} sweep(s)" for s in sweeps) + "  (this run)")
    for label, pool in (("this run", rows), ("every run", earlier + rows)):
        ranges = {s: [] for s in sweeps}
        for split, name, batch in cases:
            line = f"{split:7s} {name:12s} {batch:5d}  "
            for s in sweeps:
                per_run = {}
                for r in pool:
                    if (r["model"], int(r["batch"]), int(r["sweeps"])) == (name, batch, s):
                        per_run.setdefault(r["run"], []).append(float(r["estimate_s"]))
                spread = statistics.median((max(e) - min(e)) / statistics.median(e) for e in per_run.values())
                ranges[s].append(spread)
                line += f"{spread:10.0%}  "
            if label == "this run":
                print(line)
        runs = len({r["run"] for r in pool})
        for s in sweeps:
            print(
                f"{label} ({runs} run(s)), {s} sweep(s): range per row {min(ranges[s]):.0%}-{max(ranges[s]):.0%}, "
                f"median {statistics.median(ranges[s]):.0%}"
            )
    if not args.no_write:
        write_csv(OUT, kept + rows, "calibration spread")


if __name__ == "__main__":
    main()
