"""Per-op breakdown of one training step: each (phase, aten op)'s measured self CPU time against its estimate on a
calibrated CPU, to find which ops an estimate misses.

    MALLOC_MMAP_THRESHOLD_=4294967295 MALLOC_TRIM_THRESHOLD_=4294967295 \\
        python benchmarks/op_breakdown.py benchmarks/models/resnet.py 8 benchmarks/results/calibration-cpu-1t.yaml

The two glibc settings keep freed memory in the process, so no page faults blur the ops' times (the estimate here
leaves them out too: this compares op costs only). One torch thread, the process clock, torch.profiler around one
phase at a time over five steps after three warm-up steps; the profiler adds about a microsecond a call, and ops the
profile does not record (copies inside composite ops) show with no estimate; times are self times, so a convolution's
work shows under the kernel it calls (mkldnn_convolution). Diagnostic only: nothing is written.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections import defaultdict
from pathlib import Path

PHASES = ("forward", "backward", "optimizer")
STEPS, WARMUP = 5, 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="a model file")
    parser.add_argument("batch", type=int)
    parser.add_argument("calibration", type=Path, help="an `advisor calibrate` overlay (local-cpu)")
    parser.add_argument("--share", type=float, default=0.01, help="hide ops under this share of their phase")
    args = parser.parse_args()

    import torch

    from advisor import api
    from advisor.estimator.roofline import profile_op_time, step_bytes
    from advisor.profiler.model_file import load_model_file
    from advisor.profiler.profile import profile_model
    from advisor.profiler.step import build, train_step

    torch.set_num_threads(1)
    prof = profile_model(args.model, batch_size=args.batch, device="cpu", precision="fp32", repeats=0, faults=False)
    cat = api.catalog([args.calibration])
    dev = cat.devices["local-cpu"]
    eff = cat.efficiency[dev.efficiency]
    moved = step_bytes(prof, args.batch)
    estimated: dict[tuple[str, str], float] = defaultdict(float)
    calls: dict[tuple[str, str], int] = defaultdict(int)
    for op in prof.ops:
        estimated[(op.phase, op.op)] += profile_op_time(op, dev, eff, "fp32", "fp32", args.batch, moved).seconds
        calls[(op.phase, op.op)] += op.count

    mf = load_model_file(args.model)
    model, batch, opt, _ = build(mf, "cpu", args.batch, "fp32", None)
    for _ in range(WARMUP):
        train_step(mf, model, batch, opt, "cpu", None, None)
    measured: dict[tuple[str, str], float] = defaultdict(float)
    phase_s: dict[str, float] = defaultdict(float)
    for wanted in PHASES:

        def around(name: str, wanted: str = wanted):
            @contextlib.contextmanager
            def profiled():
                if name != wanted:
                    yield
                    return
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
                    start = time.process_time()
                    yield
                    phase_s[name] += time.process_time() - start
                for event in p.key_averages():
                    if event.key.startswith("aten::"):
                        measured[(name, "aten." + event.key[6:])] += event.self_cpu_time_total * 1e-6

            return profiled()

        for _ in range(STEPS):
            train_step(mf, model, batch, opt, "cpu", None, around)

    for phase in PHASES:
        est = sum(v for (p, _), v in estimated.items() if p == phase)
        print(f"{phase}: estimated {est * 1e3:.2f} ms, measured {phase_s[phase] / STEPS * 1e3:.2f} ms (profiled)")
        keys = {k for k in (*estimated, *measured) if k[0] == phase}
        for key in sorted(keys, key=lambda k: -max(estimated.get(k, 0.0), measured.get(k, 0.0) / STEPS)):
            e, m = estimated.get(key, 0.0), measured.get(key, 0.0) / STEPS
            if max(e, m) < args.share * max(est, 1e-12):
                continue
            error = f"{(e / m - 1) * 100:+6.0f} %" if m > 0 else "      -"
            n = calls.get(key, 0)
            print(f"  {key[1]:40} {n:5d} calls  est {e * 1e3:8.3f} ms  measured {m * 1e3:8.3f} ms  {error}")


if __name__ == "__main__":
    main()
