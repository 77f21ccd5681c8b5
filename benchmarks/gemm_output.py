"""What a CPU GEMM's fresh output costs (`Efficiency.gemm_output_passes`, what advisor calibrate times with
`kernels.output_points`): linear layers' GEMMs x·Wᵀ timed three ways, on hot operands into one output, on operands
rotating through 64 MB into one output (what the matmul curves time), and on rotating operands each into an output
of its own, the outputs rotating with them (as a training step writes a fresh tensor no recent op touched).

    python benchmarks/gemm_output.py [--threads 2] [--no-write]

The shapes are the calibration's four linear layers, a transformer's and an MLP's, with nanoGPT's head and two with
a long reduction (512 and 1,024), where the output is small beside the work. Medians on the wall clock (the
process clock at one thread), three tries per shape. Appends one line per shape and try to
benchmarks/results/gemm-output.csv and prints the extra time and the rate of output it comes to. Diagnostic only:
nothing in advisor/ reads it.
"""

from __future__ import annotations

import datetime as dt
import itertools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from vector_in_turn import append, parse, timed  # noqa: E402  (this folder, the script's own, is on the path)

OUT = ROOT / "benchmarks" / "results" / "gemm-output.csv"
# (rows, reduction, columns): the calibration's BIAS_SHAPES, nanoGPT's head, two long reductions
SHAPES = ((1024, 128, 384), (1024, 512, 128), (4096, 256, 256), (8192, 64, 64), (1024, 128, 2000))
SHAPES += ((1024, 512, 512), (512, 1024, 1024))
ROTATE_BYTES = 64e6  # operands (and outputs) rotated through: beyond the caches of the development VMs' cores
TRIES, CALLS = 3, 41


def main() -> None:
    args = parse(__doc__, 2)

    import torch

    from advisor.profiler.device import cpu_name

    torch.set_num_threads(args.threads)
    clock = time.process_time if args.threads == 1 else time.perf_counter
    run = dt.datetime.now().strftime("%Y-%m-%dT%H:%M")
    lines = []
    for rows, inner, cols in SHAPES:
        written = 4.0 * rows * cols
        count = max(2, int(ROTATE_BYTES / (written + 4.0 * inner * (rows + cols))))
        # every output written once first: no page the OS has yet to hand out is timed
        sets = [(torch.randn(rows, inner), torch.randn(cols, inner), torch.randn(rows, cols)) for _ in range(count)]
        x, w, one = sets[0]
        turn = itertools.cycle(sets)

        def into_one(turn=turn, one=one):
            a, b, _ = next(turn)
            return torch.mm(a, b.t(), out=one)

        def into_own(turn=turn):
            a, b, own = next(turn)
            return torch.mm(a, b.t(), out=own)

        for k in range(TRIES):
            hot = timed(lambda x=x, w=w, one=one: torch.mm(x, w.t(), out=one), CALLS, clock)
            rotating = timed(into_one, CALLS, clock)
            fresh = timed(into_own, CALLS, clock)
            extra = fresh - rotating
            line = {"run": run, "cpu": cpu_name(), "threads": args.threads, "rows": rows, "inner": inner,
                    "cols": cols, "try": k + 1, "output_mb": round(written / 1e6, 3), "hot_us": round(hot * 1e6, 1),
                    "one_output_us": round(rotating * 1e6, 1), "fresh_output_us": round(fresh * 1e6, 1),
                    "extra_us": round(extra * 1e6, 1),
                    "output_gb_s": round(written / extra / 1e9, 1) if extra > 0 else ""}  # fmt: skip
            lines.append(line)
            rate = f"{line['output_gb_s']} GB/s of output" if extra > 0 else "none"
            print(f"{rows}x{inner}x{cols} ({written / 1e6:.2f} MB out), try {k + 1}: hot {line['hot_us']} µs, "
                  f"one output {line['one_output_us']} µs, fresh outputs {line['fresh_output_us']} µs: "
                  f"+{line['extra_us']} µs ({rate})", flush=True)  # fmt: skip
        del sets
    if not args.no_write:
        append(OUT, lines)


if __name__ == "__main__":
    main()
