"""How fast and how lean is profiling a 70B model? (issue 3's committed benchmark, not a timed test.)

    python benchmarks/profile_speed.py [--runs 3] [--model profiles/models/llama2_70b.py]

Profiles a Llama-2-70B-shaped model (80 layers, 8192 wide, sequence 4096, batch 1) forward, backward and
AdamW step on meta, each measurement in a fresh Python process so that its peak RSS is its own:

- `advisor profile`: what the command does (two batch sizes, 1 and 2, then the per-op linear fit), bf16-mixed;
- one counted step: one training step (batch 1) under advisor's counter;
- FlopCounterMode: the same step (batch 1, fp32, as meta has no autocast) under plain
  torch.utils.flop_counter.FlopCounterMode, for the ratio.

Reports the work's wall time (after imports), the whole process's wall time and its peak RSS
(resource.getrusage ru_maxrss), best and median over the runs. Targets: <= 10 s and <= 1.5 GB.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = ("advisor profile", "one counted step", "FlopCounterMode")


def child(mode: str, model: str) -> None:
    sys.path.insert(0, str(ROOT))
    import torch

    from advisor.profiler.model_file import load_model_file
    from advisor.profiler.profile import profile_model
    from advisor.profiler.step import build, forward_loss, run_step

    t0 = time.perf_counter()
    if mode == "advisor profile":
        p = profile_model(model, batch_size=1, device="meta", precision="bf16-mixed", optimizer="adamw")
        flops = p.flops(1)
    elif mode == "one counted step":
        r = run_step(load_model_file(model), "meta", 1, "bf16-mixed", "adamw")
        flops = sum(c[1] for c in r.calls)
    else:
        from torch.utils.flop_counter import FlopCounterMode

        mf = load_model_file(model)
        net, batch, opt, _ = build(mf, "meta", 1, "fp32", "adamw")
        with FlopCounterMode(display=False) as fc:
            forward_loss(mf, net, batch).backward()
            opt.step()
        flops = fc.get_total_flops()
    work = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux
    print(json.dumps({"work_s": work, "peak_rss_bytes": rss, "flops": flops, "torch": torch.__version__}))


def measure(mode: str, model: str) -> dict:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--model", model],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    data = json.loads(out.stdout.strip().splitlines()[-1])
    data["process_s"] = time.perf_counter() - t0
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--model", default=str(ROOT / "profiles" / "models" / "llama2_70b.py"))
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.model)
    results = {m: [measure(m, args.model) for _ in range(args.runs)] for m in MODES}
    print(
        f"{Path(args.model).name}, batch 1, forward + backward + AdamW on meta; {args.runs} runs each (best / median)"
    )
    print(f"{'':18s} {'work s':>15s} {'process s':>15s} {'peak RSS GB':>15s} {'FLOPs':>12s}")
    for m, rs in results.items():

        def col(key, scale=1.0, rs=rs):
            v = [r[key] / scale for r in rs]
            return f"{min(v):6.2f} / {statistics.median(v):6.2f}"

        print(
            f"{m:18s} {col('work_s'):>15s} {col('process_s'):>15s} {col('peak_rss_bytes', 1e9):>15s} "
            f"{rs[0]['flops']:12.4e}"
        )
    ours = statistics.median(r["work_s"] for r in results["one counted step"])
    theirs = statistics.median(r["work_s"] for r in results["FlopCounterMode"])
    print(
        f"one counted step / FlopCounterMode, median work time: {ours / theirs:.2f}x; "
        f"FLOPs {results['one counted step'][0]['flops'] / results['FlopCounterMode'][0]['flops']:.3f}x"
    )


if __name__ == "__main__":
    main()
