"""Estimates against published measured training throughput, for hardware we cannot run here.

    python benchmarks/published.py [--models DIR] [--cache DIR] [--out FILE.md]

Each row is a setup someone measured and published (the source is in the row). The model is profiled on
the meta device from profiles/models/<name>.py (or --models DIR/<name>.py) at the published precision,
then estimated with the shipped catalog on the closest catalog hardware, and the published figure is
compared with ours: error = (estimated - published) / published. Nothing here is tuned per row; the
efficiency data in catalog/efficiency.yaml is the only knob, and it is the same for every model.

Caveats, stated once: NVIDIA's DeepLearningExamples figures come from tuned containers (NHWC, DALI, fused
LAMB/Adam, apex), which eager PyTorch does not always match; Meta's GPU-hour totals include restarts,
evaluation and idle time, so the throughput derived from them is a lower bound on the step throughput
(and they trained with tensor/pipeline parallelism in a layout the totals do not state: rows use FSDP;
benchmarks/large_scale.py compares stated layouts).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DLE_RN50 = (
    "https://github.com/NVIDIA/DeepLearningExamples/blob/master/PyTorch/Classification/ConvNets/resnet50v1.5/README.md"
)
DLE_RN50_CFG = "https://github.com/NVIDIA/DeepLearningExamples/blob/master/PyTorch/Classification/ConvNets/configs.yml"
DLE_BERT = "https://github.com/NVIDIA/DeepLearningExamples/blob/master/PyTorch/LanguageModeling/BERT/README.md"
LLAMA2 = "https://arxiv.org/abs/2307.09288"
LLAMA3 = "https://github.com/meta-llama/llama3/blob/main/MODEL_CARD.md"


@dataclass
class Row:
    model: str  # model file stem
    hardware: str
    precision: str
    micro_batch: int | None
    global_batch: int
    published: float
    unit: str  # "samples/s" (all devices) or "tokens/s/device"
    source: str
    setup: str
    nodes: int = 1
    count: int | None = None
    strategy: str | None = None
    checkpointing: bool = False


def _tokens_per_gpu(tokens: float, gpu_hours: float) -> float:
    return tokens / (gpu_hours * 3600)


ROWS = [
    Row(
        "resnet50",
        "a100-80gb-sxm",
        "fp16-mixed",
        256,
        256,
        2470,
        "samples/s",
        DLE_RN50,
        "DGX A100 80GB, 1 GPU, AMP, batch 256 (configs.yml), pytorch-21.03 NGC",
    ),
    Row(
        "resnet50",
        "a100-80gb-sxm",
        "tf32",
        256,
        256,
        938,
        "samples/s",
        DLE_RN50,
        "DGX A100 80GB, 1 GPU, TF32, batch 256",
    ),
    Row(
        "resnet50",
        "onprem-dgx-a100",
        "fp16-mixed",
        256,
        2048,
        16621,
        "samples/s",
        DLE_RN50,
        "DGX A100 80GB, 8 GPUs, AMP, batch 256 per GPU",
    ),
    Row(
        "resnet50",
        "v100-sxm2-16gb",
        "fp16-mixed",
        256,
        256,
        1200,
        "samples/s",
        DLE_RN50,
        "DGX-1 V100 16GB, 1 GPU, AMP, batch 256",
    ),
    Row(
        "resnet50",
        "v100-sxm2-16gb",
        "fp32",
        112,
        112,
        367,
        "samples/s",
        DLE_RN50,
        "DGX-1 V100 16GB, 1 GPU, FP32, batch 112",
    ),
    Row(
        "resnet50",
        "aws-p3.16xlarge",
        "fp16-mixed",
        256,
        2048,
        8322,
        "samples/s",
        DLE_RN50,
        "DGX-1 V100 16GB, 8 GPUs, AMP (p3.16xlarge: same 8 x V100 16GB NVLink mesh)",
    ),
    Row(
        "bert_large",
        "a100-80gb-sxm",
        "fp16-mixed",
        256,
        8192,
        580,
        "samples/s",
        DLE_BERT,
        "BERT-large pretraining phase 1 (seq 128), DGX A100 80GB, 1 GPU, mixed, batch 256 x 32 accumulation, LAMB",
    ),
    Row(
        "bert_large",
        "a100-80gb-sxm",
        "tf32",
        128,
        8192,
        317,
        "samples/s",
        DLE_BERT,
        "same, TF32, batch 128 x 64 accumulation",
    ),
    Row("bert_large", "onprem-dgx-a100", "fp16-mixed", 256, 65536, 4591, "samples/s", DLE_BERT, "same, 8 GPUs, mixed"),
    Row(
        "bert_large",
        "v100-sxm2-32gb",
        "fp16-mixed",
        64,
        4096,
        224,
        "samples/s",
        DLE_BERT,
        "BERT-large phase 1 (seq 128), DGX-1 V100 32GB, 1 GPU, mixed, batch 64 x 64 accumulation",
    ),
    Row(
        "bert_large",
        "aws-p3dn.24xlarge",
        "fp16-mixed",
        64,
        32768,
        1746,
        "samples/s",
        DLE_BERT,
        "same, 8 GPUs (p3dn.24xlarge: 8 x V100 32GB NVLink mesh)",
    ),
    Row(
        "llama2_7b",
        "onprem-dgx-a100",
        "bf16-mixed",
        None,
        1024,
        _tokens_per_gpu(2e12, 184_320),
        "tokens/s/device",
        LLAMA2,
        "Llama 2 7B: 2T tokens in 184,320 A100-80GB GPU-hours (Table 2), 4M-token batch; here 32 x DGX A100, FSDP",
        nodes=32,
        strategy="fsdp",
    ),
    Row(
        "llama2_70b",
        "onprem-dgx-a100",
        "bf16-mixed",
        None,
        1024,
        _tokens_per_gpu(2e12, 1_720_320),
        "tokens/s/device",
        LLAMA2,
        "Llama 2 70B: 2T tokens in 1,720,320 GPU-hours; here 32 x DGX A100, FSDP, activation checkpointing",
        nodes=32,
        strategy="fsdp",
        checkpointing=True,
    ),
    Row(
        "llama3_8b",
        "onprem-dgx-h100",
        "bf16-mixed",
        None,
        512,
        _tokens_per_gpu(15e12, 1.3e6),
        "tokens/s/device",
        LLAMA3,
        "Llama 3 8B: 15T+ tokens in 1.3M H100-80GB GPU-hours (model card); here 32 x DGX H100, FSDP, "
        "activation checkpointing (sequence 8192 does not fit without)",
        nodes=32,
        strategy="fsdp",
        checkpointing=True,
    ),
    Row(
        "llama3_70b",
        "onprem-dgx-h100",
        "bf16-mixed",
        None,
        512,
        _tokens_per_gpu(15e12, 6.4e6),
        "tokens/s/device",
        LLAMA3,
        "Llama 3 70B: 15T+ tokens in 6.4M GPU-hours; here 32 x DGX H100, FSDP, activation checkpointing",
        nodes=32,
        strategy="fsdp",
        checkpointing=True,
    ),
]


def model_file(name: str, extra: Path | None) -> Path | None:
    for folder in (ROOT / "profiles" / "models", extra):
        if folder is not None and (folder / f"{name}.py").is_file():
            return folder / f"{name}.py"
    return None


def profile_for(row: Row, extra: Path | None, cache: Path):
    from advisor.profiler.schema import load_profile

    path = model_file(row.model, extra)
    if path is None:
        return None
    batch = row.micro_batch or 1
    out = cache / f"{row.model}-{row.precision}-b{batch}.yaml"
    if not out.is_file():
        cmd = [
            sys.executable,
            "-m",
            "advisor",
            "profile",
            str(path),
            "--device",
            "meta",
            "-b",
            str(batch),
            "--precision",
            row.precision,
            "-o",
            str(out),
        ]
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    return load_profile(out)


def run(extra: Path | None, cache: Path) -> tuple[list[dict], list[str]]:
    from advisor import api

    cat = api.catalog()
    results, skipped = [], []
    for row in ROWS:
        prof = profile_for(row, extra, cache)
        if prof is None:
            skipped.append(f"{row.model} ({row.hardware}): no model file {row.model}.py")
            continue
        est = api.estimate(
            prof,
            row.hardware,
            count=row.count,
            nodes=row.nodes,
            precision=row.precision,
            strategy=row.strategy,
            checkpointing=row.checkpointing,
            micro_batch=row.micro_batch,
            global_batch=row.global_batch,
            cat=cat,
        )
        world = est.config.world
        value = est.samples_per_s
        if row.unit == "tokens/s/device":
            value = est.samples_per_s * (prof.tokens_per_sample or 1) / world
        results.append(
            {
                "model": row.model,
                "hardware": row.hardware,
                "devices": world,
                "precision": row.precision,
                "published": row.published,
                "estimated": value,
                "unit": row.unit,
                "error": (value - row.published) / row.published,
                "mfu": est.mfu,
                "fits": est.memory.fits,
                "setup": row.setup,
                "source": row.source,
            }
        )
    return results, skipped


def table(results: list[dict]) -> str:
    lines = [
        "| model | hardware | devices | precision | published | estimated | unit | error | est. MFU |",
        "|---|---|---:|---|---:|---:|---|---:|---:|",
    ]
    for r in results:
        fit = "" if r["fits"] else " (does not fit)"
        lines.append(
            f"| {r['model']} | {r['hardware']} | {r['devices']} | {r['precision']} | {r['published']:,.0f} | "
            f"{r['estimated']:,.0f}{fit} | {r['unit']} | {100 * r['error']:+.0f} % | {100 * r['mfu']:.0f} % |"
        )
    groups = (
        ("measured step throughput (DeepLearningExamples)", [r for r in results if r["unit"] == "samples/s"]),
        ("derived from GPU-hour totals (lower bounds)", [r for r in results if r["unit"] != "samples/s"]),
    )
    lines.append("")
    for label, rows in groups:
        if rows:
            errs = [abs(r["error"]) for r in rows]
            lines.append(
                f"- {label}: {len(rows)} setups, median absolute error {100 * statistics.median(errs):.0f} %, "
                f"maximum {100 * max(errs):.0f} %, mean signed error "
                f"{100 * statistics.mean(r['error'] for r in rows):+.0f} %"
            )
    return "\n".join(lines)


def sources(results: list[dict]) -> str:
    seen, lines = set(), []
    for r in results:
        lines.append(f"- {r['model']} on {r['hardware']}: {r['setup']} ({r['source']})")
        seen.add(r["source"])
    lines.append(f"- batch sizes of the ResNet-50 rows: {DLE_RN50_CFG}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, help="folder with model files missing from profiles/models")
    ap.add_argument("--cache", type=Path, help="folder for the generated profiles (default: a temporary one)")
    ap.add_argument("--out", type=Path, help="also write the table and sources as Markdown here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or Path(tmp)
        cache.mkdir(parents=True, exist_ok=True)
        results, skipped = run(args.models, cache)
    text = table(results) + "\n\nSetups and sources:\n" + sources(results)
    if skipped:
        text += "\n\nSkipped (model file not found):\n" + "\n".join(f"- {s}" for s in skipped)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
