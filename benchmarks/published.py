"""Estimates against published, measured GPU training throughput (hardware this project cannot run).

    python benchmarks/published.py [--data FILE] [--models DIR] [--no-write] [--only FAMILY,...]

Reads benchmarks/data/published_gpu.yaml (one cited row per measured setup; benchmarks/data/README.md), profiles
each model once per precision and optimizer on the meta device (profiles/models/<model>.py, else
benchmarks/gpu_models/<model>.py), estimates each row on its catalog hardware with the shipped catalog, and
compares: error = (estimated - measured) / measured. Nothing is tuned per row or per model; the efficiency data
in catalog/efficiency.yaml is the only knob, and only the rows marked `set: tuning` may inform it.

Writes benchmarks/results/published-gpu.csv (every row), catalog/accuracy-gpu.yaml (the error bands the
estimator attaches to GPU estimates, from the report rows) and the summary tables into README.md between the
published markers. Runs in about a minute (profiles are cached under benchmarks/results/.profiles).
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = ROOT / "benchmarks" / "data" / "published_gpu.yaml"
MODEL_DIRS = (ROOT / "profiles" / "models", ROOT / "benchmarks" / "gpu_models")
RESULTS = ROOT / "benchmarks" / "results"
CACHE = RESULTS / ".profiles"
BANDS = ROOT / "catalog" / "accuracy-gpu.yaml"
BEGIN, END = "<!-- published:begin -->", "<!-- published:end -->"
OPTIMIZER = {"sgd": "sgd", "adam": "adam", "lamb": "adam"}  # LAMB is not in torch: Adam has the same state
# A row whose stack ran NHWC (channels-last) is profiled through this wrapper of its model file, as a user who
# trains channels-last would write it: the model and 4-D float inputs converted with torch.channels_last.
CHANNELS_LAST = """import importlib.util

import torch

_spec = importlib.util.spec_from_file_location("base_model", {path!r})
base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(base)


def _nhwc(t):
    if isinstance(t, torch.Tensor) and t.dim() == 4 and t.is_floating_point():
        return t.contiguous(memory_format=torch.channels_last)
    return t


def build_model():
    return base.build_model().to(memory_format=torch.channels_last)


def example_batch(batch_size):
    batch = base.example_batch(batch_size)
    if isinstance(batch, (tuple, list)):
        return tuple(_nhwc(t) for t in batch)
    if isinstance(batch, dict):
        return {{k: _nhwc(v) for k, v in batch.items()}}
    return _nhwc(batch)


if hasattr(base, "training_step"):
    training_step = base.training_step
if hasattr(base, "make_optimizer"):
    make_optimizer = base.make_optimizer
"""


# DeepLearningExamples' BERT SQuAD, GNMT, Transformer-XL and NCF scripts run the whole model in fp16 (apex AMP O2,
# --math fp16) with fp32 master weights, and Lambda's benchmark runs the same scripts: their fp16 rows are profiled
# as a pure 16-bit model (softmax, norms and activations in 16 bits) and estimated under fp16-mixed. (NCF's ncf.py
# moved to autocast in April 2023, after the README's figures, measured in the 21.04 container, and after Lambda's
# fork, which still calls amp.initialize(opt_level="O2").)
HALF_MODEL = (
    "bert_large_squad",
    "bert_base_squad",
    "gnmt_wmt16",
    "ncf",
    "transformer_xl_base",
    "transformer_xl_base_full_softmax",
)


def profiled_precision(row: dict) -> str:
    return "bf16" if row["precision"] == "fp16-mixed" and row["model"] in HALF_MODEL else row["precision"]


def channels_last(row: dict) -> bool:
    return "nhwc" in row.get("stack", "").lower() or row["id"].endswith("-nhwc")


def model_file(name: str, extra: Path | None) -> Path | None:
    for folder in (*MODEL_DIRS, extra):
        if folder is not None and (folder / f"{name}.py").is_file():
            return folder / f"{name}.py"
    return None


def profile_for(row: dict, extra: Path | None, profiles: dict):
    """The meta profile of the row's model at its precision and optimizer (cached by model file hash)."""
    import hashlib

    from profile_cache import profiler_digest  # benchmarks/ is the script's own folder, first on sys.path

    from advisor.profiler.profile import profile_model
    from advisor.profiler.schema import load_profile, save_profile

    path = model_file(row["model"], extra)
    if path is None:
        return None
    optimizer = OPTIMIZER.get(row["optimizer"])
    nhwc = channels_last(row)
    precision = profiled_precision(row)
    key = (row["model"], precision, optimizer, nhwc)
    if key in profiles:
        return profiles[key]
    # the model file and the helpers of its folder it may build on (_*.py)
    sources = b"".join(p.read_bytes() for p in [path, *sorted(path.parent.glob("_*.py"))])
    digest = hashlib.sha256(sources + CHANNELS_LAST.encode() * nhwc + profiler_digest()).hexdigest()[:12]
    layout = "-nhwc" if nhwc else ""
    cached = CACHE / f"{row['model']}{layout}-{precision}-{optimizer or 'file'}-{digest}.yaml"
    if nhwc:
        CACHE.mkdir(parents=True, exist_ok=True)
        wrapper = CACHE / f"{row['model']}_nhwc.py"
        wrapper.write_text(CHANNELS_LAST.format(path=str(path)), encoding="utf-8")
        path = wrapper
    if cached.is_file():
        prof = load_profile(cached)
        if prof.module_calls is None:  # made before profiles counted module calls
            prof = None
    else:
        prof = None
    if prof is None:
        batch = min(8, row["micro_batch"])
        prof = profile_model(
            path, batch_size=batch, device="meta", precision=precision, optimizer=optimizer, name=row["model"]
        )
        CACHE.mkdir(parents=True, exist_ok=True)
        save_profile(prof, cached)
    profiles[key] = prof
    return prof


def estimate_row(row: dict, prof, cat):
    """(advisor's estimate of a published row's setup, its throughput in the row's unit)."""
    from advisor import api
    from advisor.estimator.runtime import RunOptions

    est = api.estimate(
        prof,
        row["hardware"],
        count=row["count"],
        precision=row["precision"],
        micro_batch=row["micro_batch"],
        global_batch=row["global_batch"],
        cat=cat,
        run=RunOptions(loader_workers=row.get("loader_workers")),
    )
    samples_per_s = est.samples_per_s * dropped_batch_factor(row)
    if row["unit"] != "tokens/s":
        return est, samples_per_s
    return est, samples_per_s * (counted(row["model"], "TOKENS_COUNTED") or prof.tokens_per_sample or 1)


@functools.cache
def counted(model: str, name: str) -> float | None:
    """A figure the model file declares about what its source counts but does not compute: TOKENS_COUNTED (tokens a
    sample counts where batches are padded, gnmt_wmt16.py) or EPOCH_SAMPLES (samples an epoch counts, ncf.py);
    None where the file declares none."""
    import importlib.util

    path = model_file(model, None)
    if path is None or name not in path.read_text(encoding="utf-8"):
        return None
    spec = importlib.util.spec_from_file_location(f"published_{model}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name, None)


def dropped_batch_factor(row: dict) -> float:
    """Samples counted per sample computed where the source divides its epoch into micro-batches, drops the last
    (partial) one and still counts the whole epoch (DeepLearningExamples' NCF: each of `count` workers takes
    EPOCH_SAMPLES / count samples, torch.split into micro-batches, [:-1]); 1 for every other model."""
    epoch = counted(row["model"], "EPOCH_SAMPLES")
    if not epoch:
        return 1.0
    per_worker, batch = int(epoch / row["count"]), row["micro_batch"]
    steps = -(-per_worker // batch) - 1  # ceil, less the dropped last split
    return per_worker / (steps * batch) if steps > 0 else 1.0


def run(rows: list[dict], extra: Path | None) -> list[dict]:
    from advisor import api

    cat = api.catalog()
    profiles: dict = {}
    out = []
    for row in rows:
        prof = profile_for(row, extra, profiles)
        if prof is None:
            print(f"skipped {row['id']}: no model file {row['model']}.py", file=sys.stderr)
            continue
        est, value = estimate_row(row, prof, cat)
        device = cat.devices[est.device]
        from advisor.estimator.bands import workload_kind

        out.append(
            {
                "id": row["id"],
                "set": row["set"],
                "family": row["family"],
                "model": row["model"],
                "hardware": row["hardware"],
                "device": device.id,
                "efficiency": device.efficiency,
                "kind": workload_kind(prof),
                "count": row["count"],
                "precision": row["precision"],
                "micro_batch": row["micro_batch"],
                "measured": row["measured"],
                "estimated": value,
                "unit": row["unit"],
                "error": (value - row["measured"]) / row["measured"],
                "fits": est.memory.fits,
                "mfu": est.mfu,
                "band": est.error_band,
            }
        )
    return out


def summarize(results: list[dict], key: str) -> dict[str, dict]:
    groups: dict[str, list[float]] = {}
    for r in results:
        groups.setdefault(r[key], []).append(r["error"])
    return {
        k: {
            "rows": len(v),
            "median": statistics.median(abs(e) for e in v),
            "max": max(abs(e) for e in v),
            "mean": statistics.mean(v),
            "same_sign": all(e > 0 for e in v) or all(e < 0 for e in v),
        }
        for k, v in sorted(groups.items())
    }


def markdown(results: list[dict], wall_s: float) -> str:
    report = [r for r in results if r["set"] == "report"]
    tuning = [r for r in results if r["set"] == "tuning"]

    def line(rows):
        errs = [abs(r["error"]) for r in rows]
        return (
            f"{len(rows)} rows, median |error| **{statistics.median(errs):.0%}**, max **{max(errs):.0%}**, "
            f"mean signed {statistics.mean(r['error'] for r in rows):+.0%}"
        )

    lines = [
        f"Run on {dt.date.today().isoformat()} ({wall_s:.0f} s): {len(results)} published rows, "
        f"{len({r['device'] for r in results})} GPUs.",
        "",
        f"- report rows (families never used for fitting): {line(report)}",
        f"- tuning rows: {line(tuning)}",
        "",
        "| report family | rows | median \\|error\\| | max \\|error\\| | mean signed |",
        "|---|---:|---:|---:|---:|",
    ]
    for fam, s in summarize(report, "family").items():
        lines.append(f"| {fam} | {s['rows']} | {s['median']:.0%} | {s['max']:.0%} | {s['mean']:+.0%} |")
    lines += [
        "",
        "| device (report rows) | rows | median \\|error\\| | max \\|error\\| | mean signed |",
        "|---|---:|---:|---:|---:|",
    ]
    for dev, s in summarize(report, "device").items():
        flag = " (all one sign)" if s["same_sign"] and s["rows"] > 1 else ""
        lines.append(f"| {dev} | {s['rows']} | {s['median']:.0%} | {s['max']:.0%} | {s['mean']:+.0%}{flag} |")
    return "\n".join(lines)


def bands(results: list[dict]) -> dict:
    """Error bands from the report rows: per efficiency family and workload kind, the median |error| of the rows
    each covers (at least 3 rows for a kind; otherwise the family's band over all its kinds), and per device with
    at least 2 rows (an estimate on the device takes its own band where that is the wider, bands.band_for)."""
    today = dt.date.today().isoformat()
    report = [r for r in results if r["set"] == "report"]

    from advisor.estimator.bands import band_entry

    def entry(ident: str, applies_to: str, kind: str, group: list[dict]) -> dict:
        devices = sorted({r["device"] for r in group})
        basis = (
            f"median |error| of {len(group)} published {kind if kind != 'any' else ''} training "
            f"runs on {', '.join(devices)} (report rows of benchmarks/published.py)".replace("  ", " ")
        )
        source = "benchmarks/published.py over benchmarks/data/published_gpu.yaml"
        # throughput errors: + where the estimate is too fast
        return band_entry(ident, applies_to, kind, [r["error"] for r in group], basis, source, today)

    entries = []
    by_family: dict[str, list[dict]] = {}
    by_device: dict[str, list[dict]] = {}
    for r in report:
        by_family.setdefault(r["efficiency"], []).append(r)
        by_device.setdefault(r["device"], []).append(r)
    for family, rows in sorted(by_family.items()):
        groups = {"any": rows}
        for r in rows:
            groups.setdefault(r["kind"], []).append(r)
        for kind, group in sorted(groups.items()):
            if kind == "any" or len(group) >= 3:
                entries.append(entry(f"gpu-{family}-{kind}", family, kind, group))
    entries += [entry(f"gpu-device-{d}", d, "any", rows) for d, rows in sorted(by_device.items()) if len(rows) >= 2]
    return {"accuracy": entries}


def write_readme(text: str) -> None:
    from readme_block import write_block  # benchmarks/ is the script's own folder, first on sys.path

    write_block(BEGIN, END, text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA, help="published rows (default: %(default)s)")
    ap.add_argument("--models", type=Path, help="another folder of model files")
    ap.add_argument("--only", help="comma-separated families")
    ap.add_argument("--no-write", action="store_true", help="print only: no CSV, bands or README")
    args = ap.parse_args()
    from advisor.io import dump_yaml, read_yaml, write_atomic, write_csv

    start = time.perf_counter()
    rows = read_yaml(args.data)["rows"]
    if args.only:
        keep = set(args.only.split(","))
        rows = [r for r in rows if r["family"] in keep]
    results = run(rows, args.models)
    for r in results:
        print(
            f"{r['set']:6s} {r['id']:42s} {r['device']:16s} x{r['count']} {r['precision']:10s} "
            f"b={r['micro_batch']:<5d} measured {r['measured']:10,.0f} est {r['estimated']:10,.0f} {r['unit']:9s} "
            f"{r['error']:+6.0%}"
            f"{'' if r['fits'] else ' (does not fit)'}",
            file=sys.stderr,
        )
    text = markdown(results, time.perf_counter() - start)
    print(text)
    if args.no_write or args.only:
        return
    header = (
        "# Generated by benchmarks/published.py from the report rows of benchmarks/data/published_gpu.yaml: "
        "do not edit.\n"
    )
    write_atomic(BANDS, header + dump_yaml(bands(results)), "error bands")
    rebanded(results)
    RESULTS.mkdir(parents=True, exist_ok=True)
    shown = [{k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()} for r in results]
    write_csv(RESULTS / "published-gpu.csv", shown, "published rows")
    write_readme(text)


def rebanded(results: list[dict]) -> None:
    """Each row's band as an estimate carries it from now on: from the bands just written, not from those the
    catalog held when the row was estimated (the previous run's)."""
    from advisor import api
    from advisor.catalog import load
    from advisor.estimator.bands import band_for

    load._load_cached.cache_clear()
    cat = api.catalog()
    for r in results:
        device = cat.devices[r["device"]]
        r["band"] = band_for(cat, device, cat.efficiency[device.efficiency], None, r["kind"])[0]


if __name__ == "__main__":
    main()
