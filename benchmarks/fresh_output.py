"""Whether the rate a CPU step's ops write fresh outputs (`Efficiency.fresh_output`, what advisor calibrate times with
`bench.fresh_points`) depends on the bytes the step touches or on the op's own size: a chain of multiplies and adds,
each reading what the one before wrote and writing into a buffer of its own, the buffers filling a footprint, for
ops of 256 KiB, 1 MiB and 4 MiB (a tensor) and footprints of 8 MiB to 1 GiB, against the same op called alone (its
output where the last call's was, in the cache).

    python benchmarks/fresh_output.py [--threads 2] [--no-write]

The buffers are allocated before the timing, so no fresh page from the OS is timed. Medians on the wall clock (the
process clock at one thread). Appends one line per op size and footprint to benchmarks/results/fresh-output.csv and
prints the rates in GB/s of output. The calibration measures 1 MiB ops only, over 8-512 MiB, and the estimator looks
the rate up by the step's bytes: that holds if the rate moves with the footprint and hardly with the op's size.
Diagnostic only: nothing in advisor/ reads it.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from vector_in_turn import append, parse, timed  # noqa: E402  (this folder, the script's own, is on the path)

OUT = ROOT / "benchmarks" / "results" / "fresh-output.csv"
ELEMENTS = (1 << 16, 1 << 18, 1 << 20)  # 256 KiB .. 4 MiB of fp32 an output
FOOTPRINTS_MIB = (8, 32, 128, 512, 1024)
CALLS = 3000  # ops timed per footprint (at least 3 chains)


def main() -> None:
    args = parse(__doc__, 2)

    import torch

    from advisor.profiler.device import cpu_name

    torch.set_num_threads(args.threads)
    clock = time.process_time if args.threads == 1 else time.perf_counter
    kinds = (lambda z, out: torch.mul(z, 1.5, out=out), lambda z, out: torch.add(z, z, out=out))

    run = dt.datetime.now().strftime("%Y-%m-%dT%H:%M")
    lines = []
    for n in ELEMENTS:
        shape, written = (n // 256, 256), 4.0 * n
        x = torch.randn(*shape)
        pair = [torch.empty(*shape) for _ in range(2)]
        alone = timed(lambda x=x, pair=pair: [kinds[k](x, pair[k]) for k in range(2)], 200, clock) / 2
        for mib in FOOTPRINTS_MIB:
            buffers = [torch.empty(*shape) for _ in range(max(4, (mib << 20) // int(written)))]

            def chain(x=x, buffers=buffers):
                for i, buffer in enumerate(buffers):
                    x = kinds[i % 2](x, buffer)

            turn = timed(chain, max(3, CALLS // len(buffers)), clock) / len(buffers)
            del buffers
            line = {"run": run, "cpu": cpu_name(), "threads": args.threads, "elements": n, "footprint_mib": mib,
                    "alone_us": round(alone * 1e6, 2), "in_turn_us": round(turn * 1e6, 2),
                    "alone_gb_s": round(written / alone / 1e9, 2),
                    "in_turn_gb_s": round(written / turn / 1e9, 2)}  # fmt: skip
            lines.append(line)
            print(f"{written / 2**20:5.2f} MiB ops over {mib:5d} MiB: alone {line['alone_gb_s']:6.1f} GB/s, "
                  f"in turn {line['in_turn_gb_s']:6.1f} GB/s", flush=True)  # fmt: skip
    if not args.no_write:
        append(OUT, lines)


if __name__ == "__main__":
    main()
