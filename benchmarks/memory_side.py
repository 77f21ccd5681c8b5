"""Whether the two memory-side costs a CPU step pays beyond the calibration's op curves grow with an op's own time or
with its bytes: running in turn (each output kept, as a forward pass keeps its activations, so it lands in memory no
recent call touched: `Efficiency.vector_in_turn`) and the handoff (the input written by another core's threads:
`Efficiency.handoff`). Ops from fast to slow per byte: add, ReLU, GELU, softmax over rows of 256, batch norm and
2x2 max pooling over (N, 64, 16, 16), a Bernoulli draw at p = 0.5 into a fresh tensor.

    MALLOC_MMAP_THRESHOLD_=4294967295 MALLOC_TRIM_THRESHOLD_=4294967295 \\
        python benchmarks/memory_side.py [--threads 2] [--no-write]

Each op at a few sizes: alone (called again and again on two inputs, as the calibration times it), in turn (a run of
calls keeping every output), and at more than one thread the handoff's two cases (its input written just before by a
multiply at the same thread count, and by one on a single thread). Medians on the wall clock. Appends one line per
op and size to benchmarks/results/memory-side.csv and prints what each case adds, in µs and as a ratio. If the cost
is one of the memory the bytes sit in, the µs added are alike across ops of one size and the ratios fall as the ops
get slower; if it scaled the op's own rate, the ratios would be alike instead. Diagnostic only: nothing in advisor/
reads it (the estimator adds both as bytes at the memory curve: `roofline.stream_extra_s`).
"""

from __future__ import annotations

import datetime as dt
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from vector_in_turn import append, parse, timed  # noqa: E402  (this folder, the script's own, is on the path)

OUT = ROOT / "benchmarks" / "results" / "memory-side.csv"
ELEMENTS = (1 << 16, 1 << 18, 1 << 20)  # 256 KiB .. 4 MiB of fp32 a tensor
KEPT_MB, REPS = 256, 30  # in turn: calls until their outputs pass KEPT_MB (8 .. 64 calls)


def main() -> None:
    args = parse(__doc__, 2)

    import torch
    import torch.nn.functional as F

    from advisor.profiler.device import cpu_name

    torch.set_num_threads(args.threads)
    aten = torch.ops.aten
    ops = {
        "add": lambda x: x + x,
        "relu": torch.relu,
        "gelu": F.gelu,
        "softmax": lambda x: x.softmax(-1),
        "batch_norm": lambda x: F.batch_norm(x.view(-1, 64, 16, 16), None, None, training=True),
        "max_pool": lambda x: aten.max_pool2d_with_indices(x.view(-1, 64, 16, 16), [2, 2], [2, 2], [0, 0]),
        "draw_p0.5": lambda x: torch.empty_like(x).bernoulli_(0.5),
    }

    run = dt.datetime.now().strftime("%Y-%m-%dT%H:%M")
    lines = []
    for n in ELEMENTS:
        pair = [torch.randn(n // 256, 256) for _ in range(2)]
        count = max(8, min(64, KEPT_MB * 2**20 // (4 * n)))
        for name, op in ops.items():
            flip = [0]

            def alone(op=op, pair=pair, flip=flip):
                flip[0] ^= 1
                return op(pair[flip[0]])

            def in_turn(op=op, pair=pair, count=count):
                return [op(pair[k & 1]) for k in range(count)]

            line = {"run": run, "cpu": cpu_name(), "threads": args.threads, "op": name, "elements": n,
                    "alone_us": timed(alone, REPS) * 1e6, "in_turn_us": timed(in_turn, 9) / count * 1e6}  # fmt: skip
            if args.threads > 1:
                z, x = torch.randn(n // 256, 256), torch.empty(n // 256, 256)
                times: dict[int, list[float]] = {args.threads: [], 1: []}
                for k in range(5 + REPS):
                    for producer in (args.threads, 1):  # in turn, so a slow spell of the machine hits both
                        torch.set_num_threads(producer)
                        torch.mul(z, 1.0001, out=x)
                        torch.set_num_threads(args.threads)
                        t0 = time.perf_counter()
                        op(x)
                        if k >= 5:
                            times[producer].append(time.perf_counter() - t0)
                line["matched_us"] = statistics.median(times[args.threads]) * 1e6
                line["cross_us"] = statistics.median(times[1]) * 1e6
            lines.append({k: round(v, 2) if isinstance(v, float) else v for k, v in line.items()})
            added, ratio = line["in_turn_us"] - line["alone_us"], line["in_turn_us"] / line["alone_us"]
            shown = f"in turn +{added:7.1f} us ({ratio:.2f}x)"
            if "cross_us" in line:
                shown += (f", handoff +{line['cross_us'] - line['matched_us']:7.1f} us "
                          f"({line['cross_us'] / line['matched_us']:.2f}x)")  # fmt: skip
            print(f"{n:8d} elements {name:10s} alone {line['alone_us']:8.1f} us, {shown}", flush=True)
    if not args.no_write:
        append(OUT, lines)


if __name__ == "__main__":
    main()
