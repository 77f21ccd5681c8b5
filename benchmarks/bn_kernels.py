"""cuDNN's NCHW batch norm on one GPU, from the committed kernel tables of benchmarks/gpu_local.py.

torch.profiler's tables (benchmarks/results/gpu-local/kernels/) show that on NCHW tensors whose channels hold
many elements cuDNN runs batch norm as `bn_fw_tr_1C11_kernel_NCHW` (forward) and `bn_bw_1C11_kernel_new`
(backward): one thread block per channel, whose time per call barely moves with the channel count (16 to 96
channels at 112x112) or the element width (fp16 as fp32), far below the HBM's rate. Channels whose data fits
on one multiprocessor run on the `singleread` kernels at about the memory rate instead.

This script takes the batch-norm records (shapes, calls) of the committed profiles of the TUNING models
(MobileNetV2 fp16, ResNet-50 fp32), sums each table's time in those two kernels per step, and fits the
elements one block handles per clock, forward and backward, for 1, 2 and 4 blocks per multiprocessor: the
figures `batch_norm_nchw` of catalog/efficiency.yaml (NVIDIA families) holds. The report model (EfficientNet-B0
tf32) is then predicted with them, not fitted. Run: python benchmarks/bn_kernels.py (no GPU needed).
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from advisor.catalog.load import load_catalog  # noqa: E402
from advisor.estimator import kernels  # noqa: E402
from advisor.profiler.schema import load_profile  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "gpu-local"
STEPS = 3  # gpu_local.kernel_table profiles three training steps
KERNELS = {"forward": "bn_fw_tr_1C11_kernel_NCHW", "backward": "bn_bw_1C11_kernel_new"}
TUNING = ["mobilenet_v2-fp16", "resnet50-fp32"]
REPORT = ["efficientnet_b0-tf32"]
_TIME = re.compile(r"([\d.]+)(us|ms|s)$")


def seconds(text: str) -> float:
    value, unit = _TIME.match(text).groups()
    return float(value) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def measured(name: str) -> dict[str, float]:
    """Seconds per step in each of the two kernels (all template variants) of one model's kernel table."""
    out = {"forward": 0.0, "backward": 0.0}
    for line in (RESULTS / "kernels" / f"kernels-{name}.txt").read_text().splitlines():
        for phase, kernel in KERNELS.items():
            if kernel in line:
                out[phase] += seconds(line.split()[-5])  # the "CUDA total" column
    return {phase: s / STEPS for phase, s in out.items()}


def blocks(name: str, rule) -> dict[str, float]:
    """Per phase, sum over the one-block-per-channel calls of (elements per channel) x (waves of blocks) on an
    H200 with `rule`'s blocks per multiprocessor: seconds per step x elements per clock x clock."""
    profile = load_profile(RESULTS / "profiles" / f"{name}.yaml")
    device = load_catalog().devices["h200"]
    out = {"forward": 0.0, "backward": 0.0}
    for op in profile.ops:
        work = kernels.channel_block_work(op, device, rule, profile.batch_size)
        if work:
            out[work[0]] += work[1]
    return out


def main() -> None:
    catalog = load_catalog()
    rule = catalog.efficiency["nvidia-hopper"].batch_norm_nchw
    clock = catalog.devices["h200"].boost_clock
    print(f"H200 at {clock / 1e6:.0f} MHz; threshold {rule.channel_bytes_max / 1024:.0f} KiB per channel")
    for per_sm in (1, 2, 4):
        trial = rule.model_copy(update={"blocks_per_sm": per_sm})
        fits = {}
        for phase in ("forward", "backward"):
            # elements per clock per block: work / (seconds x clock), one figure over the tuning models
            rates = [blocks(n, trial)[phase] / (measured(n)[phase] * clock) for n in TUNING]
            fits[phase] = statistics.fmean(rates)
            shown = ", ".join(f"{n} {r:.3f}" for n, r in zip(TUNING, rates, strict=True))
            print(f"  {per_sm} blocks/SM {phase:8s}: {shown} -> {fits[phase]:.3f} elements/clock")
        for name in TUNING + REPORT:
            got, work = measured(name), blocks(name, trial)
            parts = []
            for phase in ("forward", "backward"):
                est = work[phase] / (fits[phase] * clock)
                parts.append(f"{phase} {est * 1e3:6.2f} ms est / {got[phase] * 1e3:6.2f} measured")
            tag = "tuning" if name in TUNING else "report"
            print(f"    {tag} {name:22s} " + "; ".join(parts))


if __name__ == "__main__":
    main()
