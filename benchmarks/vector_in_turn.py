"""How much slower a memory-bound op runs on data that comes from memory than on the warm data the calibration's
vector-op curves are timed on: each op timed on one tensor again and again (warm, as `advisor calibrate` times
it), then in turn over enough distinct tensors that together they pass 128 MB (at least 8, at most 256), so that
no call finds its input in a cache. Out-of-place add, GELU, multiply by a scalar and softmax over rows of 256, at
several sizes (bytes read plus written a call).

    MALLOC_MMAP_THRESHOLD_=4294967295 MALLOC_TRIM_THRESHOLD_=4294967295 \\
        python benchmarks/vector_in_turn.py [--threads 1] [--no-write]

The glibc settings keep freed memory in the process, so no page faults blur the times. One thread: the process
clock, the median call; more: the wall clock, the fastest call. Appends one line per size to
benchmarks/results/vector-in-turn.csv (under this run's start time, the CPU and the thread count) and prints each
op's ratio (in turn over warm) and their median. Diagnostic only: nothing in advisor/ reads it. A model's ops lie
between the two: a small tensor is often read right after the op before wrote it, a large one seldom.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import itertools
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "benchmarks" / "results" / "vector-in-turn.csv"
SIZES_MB = (0.125, 0.5, 2.0, 8.0, 32.0)
WORKING_SET_MB, MIN_TENSORS, MAX_TENSORS = 128, 8, 256


def parse(doc: str, threads: int) -> argparse.Namespace:
    """The command line of this diagnostic and benchmarks/memory_side.py: --threads, --no-write."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=threads)
    parser.add_argument("--no-write", action="store_true", help="print only")
    return parser.parse_args()


def append(out: Path, lines: list[dict]) -> None:
    """Append `lines` to the CSV file `out`, with a header when the file is new."""
    new = not out.exists()
    with out.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(lines[0]))
        if new:
            writer.writeheader()
        writer.writerows(lines)
    print(f"appended {len(lines)} lines to {out.relative_to(ROOT)}", file=sys.stderr)


def timed(fn, calls: int, clock=time.perf_counter, pick=statistics.median) -> float:
    """`pick` (the median, or the fastest) of `calls` timings of `fn` on `clock`, after three warm-up calls: the timer
    of this diagnostic, benchmarks/memory_side.py and benchmarks/fresh_output.py."""
    for _ in range(3):
        fn()
    seconds = []
    for _ in range(calls):
        t0 = clock()
        fn()
        seconds.append(clock() - t0)
    return pick(seconds)


def main() -> None:
    args = parse(__doc__, 1)

    import torch
    import torch.nn.functional as F

    from advisor.profiler.device import cpu_name

    torch.set_num_threads(args.threads)
    clock = time.process_time if args.threads == 1 else time.perf_counter
    pick = statistics.median if args.threads == 1 else min

    ops = {"add": lambda z: z + z, "gelu": F.gelu, "mul": lambda z: z * 1.5, "softmax": lambda z: z.softmax(-1)}
    run = dt.datetime.now().strftime("%Y-%m-%dT%H:%M")
    lines = []
    for mb in SIZES_MB:
        elements = int(mb * 2**20 / 4 / 2)  # fp32, read once and written once
        count = min(MAX_TENSORS, max(MIN_TENSORS, int(WORKING_SET_MB / mb)))
        ratios = {}
        for name, op in ops.items():
            tensors = [torch.randn(elements // 256, 256) for _ in range(count)]
            warm = timed(lambda op=op, x=tensors[0]: op(x), 30, clock, pick)
            cold = timed(lambda op=op, ts=itertools.cycle(tensors): op(next(ts)), max(30, 2 * count), clock, pick)
            ratios[name] = cold / warm
        median = statistics.median(ratios.values())
        print(
            f"{mb:g} MB, {count} tensors: "
            + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items())
            + f"; median {median:.2f}x"
        )
        lines.append(
            {
                "run": run,
                "cpu": cpu_name(),
                "threads": args.threads,
                "mb": mb,
                "tensors": count,
                **{k: round(v, 3) for k, v in ratios.items()},
                "median": round(median, 3),
            }
        )
    if not args.no_write:
        append(OUT, lines)


if __name__ == "__main__":
    main()
