"""How far apart repeated CPU calibrations put the same estimates: calibrations one after another, alternating
between one sweep of the measurements and bench.SWEEPS sweeps (each point's median, calibrate's default), and
every row of benchmarks/accuracy.py estimated on each.

    python benchmarks/calibration_spread.py [--threads 2] [--pairs 3] [--no-write]

Per row and per sweep count: the range of the step estimates over the calibrations ((largest - smallest) /
median). Nothing is timed on the models themselves: the spread is the calibration's alone. Writes
benchmarks/results/calibration-spread.csv (one line per row, calibration and sweep count) and prints the ranges.
About 12 minutes at two threads with three pairs.
"""

from __future__ import annotations

import argparse
import csv
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
    from advisor.io import dump_yaml, write_atomic
    from advisor.profiler.profile import profile_model

    torch.set_num_threads(args.threads)
    cases = [
        (split, name, batch)
        for split, families in (("tuning", accuracy.TUNING), ("report", accuracy.REPORT))
        for name, batches in families
        for batch in batches
    ]
    profiles = {}
    for _, name, batch in cases:
        path = accuracy.MODELS / f"{name}.py"
        profiles[(name, batch)] = profile_model(path, batch_size=batch, device="cpu", precision="fp32", repeats=0)
    sweeps = (1, bench.SWEEPS)
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
    print(f"{'set':7s} {'model':12s} {'batch':>5s}  " + "  ".join(f"{s} sweep(s)" for s in sweeps))
    ranges = {s: [] for s in sweeps}
    for split, name, batch in cases:
        line = f"{split:7s} {name:12s} {batch:5d}  "
        for s in sweeps:
            est = [float(r["estimate_s"]) for r in rows if (r["model"], r["batch"], r["sweeps"]) == (name, batch, s)]
            spread = (max(est) - min(est)) / statistics.median(est)
            ranges[s].append(spread)
            line += f"{spread:10.0%}  "
        print(line)
    for s in sweeps:
        print(
            f"{s} sweep(s): range per row {min(ranges[s]):.0%}-{max(ranges[s]):.0%}, "
            f"median {statistics.median(ranges[s]):.0%}"
        )
    if not args.no_write:
        from io import StringIO

        text = StringIO()
        writer = csv.DictWriter(text, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        write_atomic(OUT, text.getvalue(), "calibration spread")


if __name__ == "__main__":
    main()
