"""How this machine's speed drifts over minutes: three fixed ops timed as calibrate times them (fastest of five
rounds on the wall clock at more than one thread), every few seconds, for a while.

    python benchmarks/drift.py [--minutes 8] [--threads 2] [--every 4] [--no-write]

The ops: a 512x512 fp32 GEMM, an out-of-place add of 4 Mi elements (50 MB read and written), and a 3x3
convolution of 8x64x32x32. Prints each sample and, per op, the range and the tenth / ninetieth percentiles
against the median; writes benchmarks/results/drift.csv. This is why calibrate measures in sweeps
(advisor/calibration/bench.py, SWEEPS): one sweep keeps whatever state the machine was in while it ran.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "benchmarks" / "results" / "drift.csv"


def fastest(fn, calls: int, rounds: int = 5) -> float:
    fn()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls)
    return min(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=8.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--every", type=float, default=4.0, help="seconds between samples")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    import torch

    from advisor.io import write_csv

    torch.set_num_threads(args.threads)
    a, b = torch.randn(512, 512), torch.randn(512, 512)
    x, y = torch.randn(1 << 22), torch.randn(1 << 22)
    image, weight = torch.randn(8, 64, 32, 32), torch.randn(64, 64, 3, 3)
    ops = {
        "gemm_512": (lambda: torch.mm(a, b), 20),
        "add_50mb": (lambda: torch.add(x, y), 5),
        "conv_3x3": (lambda: torch.nn.functional.conv2d(image, weight, padding=1), 3),
    }
    start, rows = time.perf_counter(), []
    while time.perf_counter() - start < args.minutes * 60:
        row = {"t_s": round(time.perf_counter() - start, 1), "threads": args.threads}
        row.update({name: f"{fastest(fn, calls):.4g}" for name, (fn, calls) in ops.items()})
        rows.append(row)
        print(" ".join(f"{k} {v}" for k, v in row.items()), file=sys.stderr)
        time.sleep(args.every)
    for name in ops:
        values = sorted(float(r[name]) for r in rows)
        mid = statistics.median(values)
        p10, p90 = values[len(values) // 10], values[(9 * len(values)) // 10]
        print(
            f"{name}: {values[0] * 1e3:.3g}-{values[-1] * 1e3:.3g} ms over {len(values)} samples, "
            f"tenth / ninetieth percentile {p10 / mid - 1:+.0%} / {p90 / mid - 1:+.0%} of the median"
        )
    if not args.no_write:
        write_csv(OUT, rows, "drift samples")


if __name__ == "__main__":
    main()
