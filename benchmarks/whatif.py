"""Re-estimate the last accuracy run's rows with the code and calibrations as they are now, against that run's
measured steps: what an estimator change would have given, in minutes rather than a 50-minute run.

    python benchmarks/whatif.py [--catalog 'benchmarks/results/calibration-cpu-{t}t.yaml'] [--rows] [--profiles DIR]

Reads benchmarks/results/accuracy-cpu.csv (the rows, their measured phases and the page faults the run's profiles
counted) and the calibration of each thread count (`{t}` in --catalog: 1 and 2). Each model is profiled once (counts
only, no timing) and its profile's counted page faults replaced by the run's, so that with unchanged code and
calibrations the estimates are the run's own (a fresh profile counts a different number on a busy host); --profiles
keeps the profiles in a folder for the next what-if. Prints, by thread count and set, the median and largest |error|
and the signed median, the run's figures beside them, and each phase's signed median; --rows lists every row. A
what-if only: measured times are the run's, so it cannot show what a change in the calibration's measurements would
do, and nothing is written. Tune on the tuning rows; the report rows say whether a change carries over.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RUN = ROOT / "benchmarks" / "results" / "accuracy-cpu.csv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog", default=str(ROOT / "benchmarks" / "results" / "calibration-cpu-{t}t.yaml"))
    parser.add_argument("--rows", action="store_true", help="list every row")
    parser.add_argument("--profiles", type=Path, help="a folder to keep the profiles in and read them from")
    args = parser.parse_args()

    from accuracy import PHASES, profile  # benchmarks/ is the script's own folder, first on sys.path

    from advisor import api
    from advisor.profiler.schema import Linear, Profile

    rows = list(csv.DictReader(RUN.open()))
    cats = {t: api.catalog([Path(args.catalog.format(t=t))]) for t in sorted({r["threads"] for r in rows})}
    profiles: dict[tuple[str, int], object] = {}
    out = []
    for r in rows:
        name, batch = r["model"], int(r["batch"])
        kept = args.profiles / f"{name}-{batch}.json" if args.profiles else None
        if (name, batch) not in profiles and kept and kept.is_file():
            profiles[name, batch] = Profile.model_validate_json(kept.read_text())
        if (name, batch) not in profiles:
            print(f"profiling {name} at {batch}", file=sys.stderr)
            profiles[name, batch] = profile(name, batch)
            if kept:
                kept.parent.mkdir(parents=True, exist_ok=True)
                kept.write_text(profiles[name, batch].model_dump_json())
        prof = profiles[name, batch]
        memory = prof.memory.model_copy(update={"step_fault_bytes": Linear(fixed=float(r["replayed_fault_mb"]) * 1e6)})
        est = api.estimate(prof.model_copy(update={"memory": memory}), "local-cpu", precision="fp32",
                           micro_batch=batch, cat=cats[r["threads"]])  # fmt: skip
        error = est.step_time_s / float(r["measured_s"]) - 1
        phases = {p: est.phases[p].seconds / float(r[f"measured_{p}_s"]) - 1 for p in PHASES}
        out.append((r, error, float(r["calibrated_error"]), phases))
    for threads in sorted({r["threads"] for r in rows}):
        for split in ("report", "tuning"):
            group = [x for x in out if x[0]["threads"] == threads and x[0]["set"] == split]
            if not group:
                continue
            new, old = [x[1] for x in group], [x[2] for x in group]
            worst = max(group, key=lambda x: abs(x[1]))
            phases = " ".join(f"{p[:3]} {100 * statistics.median(x[3][p] for x in group):+.1f} %" for p in PHASES)
            print(
                f"{threads} thread(s) {split:6}: {100 * statistics.median(map(abs, new)):.1f} % / "
                f"{100 * max(map(abs, new)):.1f} % signed {100 * statistics.median(new):+.1f} % "
                f"(run: {100 * statistics.median(map(abs, old)):.1f} % / {100 * max(map(abs, old)):.1f} % signed "
                f"{100 * statistics.median(old):+.1f} %); phases {phases}; largest {worst[0]['model']} at "
                f"{worst[0]['batch']} {100 * worst[1]:+.1f} %"
            )
    if args.rows:
        for r, error, old, phases in out:
            each = " ".join(f"{p[:3]} {100 * v:+.1f} %" for p, v in phases.items())
            row = f"{r['threads']} {r['set']:6} {r['model']:12} {r['batch']:>5}"
            print(f"{row} {100 * error:+6.1f} % (run {100 * old:+6.1f} %) {each}")


if __name__ == "__main__":
    main()
