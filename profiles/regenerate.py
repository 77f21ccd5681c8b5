"""Regenerate the shipped reference profiles: profiles/<name>.yaml from profiles/models/<name>.py.

    python profiles/regenerate.py                 # every reference model
    python profiles/regenerate.py gpt2_124m lstm  # some of them

Each model is profiled on meta (nothing allocated, so the 70B models fit on a laptop) at the per-device
batch size its file names in BATCH_SIZE, in bf16-mixed unless the file names another PRECISION, with AdamW.
Runs from the repository root; about a minute for all of them on two cores.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "profiles" / "models"
NAMES = (
    "resnet50",
    "mobilenet_v2",
    "vit_b16",
    "bert_base",
    "bert_large",
    "gpt2_124m",
    "llama2_7b",
    "llama3_8b",
    "llama2_70b",
    "llama3_70b",
    "llama3_405b",
    "gpt3_175b",
    "lstm",
)


def settings(path: Path) -> tuple[int, str]:
    """BATCH_SIZE and PRECISION as the model file assigns them (read without running the file)."""
    from advisor.profiler.sources.shipped import settings as read

    batch, precision = read(path)
    if batch is None:
        raise SystemExit(f"{path} does not assign BATCH_SIZE")
    return batch, precision


def regenerate(name: str, out_dir: Path = ROOT / "profiles", batch_size: int | None = None):
    from advisor.profiler.profile import profile_model
    from advisor.profiler.schema import save_profile

    path = MODELS / f"{name}.py"
    default_batch, precision = settings(path)
    prof = profile_model(
        path, batch_size=batch_size or default_batch, device="meta", precision=precision, optimizer="adamw", name=name
    )
    prof.model_file = f"profiles/models/{name}.py"
    save_profile(prof, out_dir / f"{name}.yaml")
    return prof


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(ROOT))
    names = argv or list(NAMES)
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        raise SystemExit(f"unknown reference model(s): {', '.join(unknown)}; known: {', '.join(NAMES)}")
    for name in names:
        t0 = time.perf_counter()
        prof = regenerate(name)
        b = prof.batch_size
        print(
            f"{name:13s} batch {b:4d} {prof.precision:10s} params {prof.parameters / 1e6:9.2f} M  "
            f"step {prof.flops(b) / 1e12:9.3f} TFLOP  {time.perf_counter() - t0:5.1f} s",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
