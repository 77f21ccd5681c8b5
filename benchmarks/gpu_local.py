"""Measured against estimated training steps on a local NVIDIA GPU: the calibrate -> estimate -> validate loop
on CUDA, and the shipped catalog's datasheet entry for the same GPU against eager PyTorch on it.

    python benchmarks/gpu_local.py run [--out DIR] [--deadline SECONDS] [--only NAME,...]   (needs a GPU)
    python benchmarks/gpu_local.py report [--dir DIR] [--no-write]                          (anywhere)
    python benchmarks/gpu_local.py runs RUN_DIR... [--dir DIR]       (DIR/runs.csv: each run's timings, the spread)

`run` does what a user with a GPU does: `advisor calibrate --device cuda` (the overlay goes to DIR, not to the
user's catalog), then, for each model of MODELS (the CPU benchmark's families at GPU batch sizes, the reference
profiles' models and the published-GPU set's), profiles one training step on the GPU and times real steps (the
median of 10 after 3 warm-ups, phases separated by synchronisation). Every profile, timings included, is saved to
DIR/profiles as it is made, so that a run stopped by its deadline keeps what it measured. Nothing is estimated on
the GPU machine.

`report` estimates every saved profile on (a) the calibrated overlay in DIR and (b) the catalog device the GPU's
name matches (the datasheet figures and the family's efficiency data, what a user without a calibration gets),
and writes DIR/validation.csv and the tables between the gpu-local markers of README.md. These rows are never
fitted into anything: catalog/efficiency.yaml comes from published rows (benchmarks/fit_gpu.py) alone, and choices
about the calibrated path may look at the TUNING families only. benchmarks/results/gpu-local holds the third of
three runs on an H200 (2026-12-04) and runs.csv the timings of all three; benchmarks/results/gpu-local-recheck a
later `run --only recommender-fp32-b2048,ncf-fp16` on another H200 machine (report it with --dir after copying the
calibration overlay beside it, with --no-write).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from published import CHANNELS_LAST  # noqa: E402 - the published rows' channels-last wrapper of a model file

OUT = ROOT / "benchmarks" / "results" / "gpu-local"
BANDS = ROOT / "catalog" / "accuracy-gpu-local.yaml"
BEGIN, END = "<!-- gpu-local:begin -->", "<!-- gpu-local:end -->"
PHASES = ("forward", "backward", "optimizer")
WARMUP, REPEATS = 3, 10
P, B, G = ROOT / "profiles" / "models", ROOT / "benchmarks" / "models", ROOT / "benchmarks" / "gpu_models"
# (name, model file, batch, precision, channels-last), most informative first: a run that meets its deadline
# stops part-way down the list.
MODELS = [
    ("resnet50-fp16-nhwc", P / "resnet50.py", 256, "fp16-mixed", True),
    ("resnet50-fp32", P / "resnet50.py", 128, "fp32", False),
    ("resnet50-tf32", P / "resnet50.py", 128, "tf32", False),
    ("bert_base-bf16", P / "bert_base.py", 64, "bf16-mixed", False),
    ("bert_large_squad-fp16", G / "bert_large_squad.py", 32, "fp16-mixed", False),
    ("gpt2_124m-bf16", P / "gpt2_124m.py", 8, "bf16-mixed", False),
    ("vit_b16-bf16", P / "vit_b16.py", 64, "bf16-mixed", False),
    ("efficientnet_b0-tf32", G / "efficientnet_b0.py", 128, "tf32", False),
    ("efficientnet_b0-fp16-nhwc", G / "efficientnet_b0.py", 256, "fp16-mixed", True),
    ("mobilenet_v2-fp16", P / "mobilenet_v2.py", 128, "fp16-mixed", False),
    ("ssd300-fp16-nhwc", G / "ssd300.py", 64, "fp16-mixed", True),
    ("gnmt-fp16", G / "gnmt.py", 128, "fp16-mixed", False),
    ("transformer_xl_base-fp16", G / "transformer_xl_base.py", 32, "fp16-mixed", False),
    ("resnext101_32x4d-fp16-nhwc", G / "resnext101_32x4d.py", 128, "fp16-mixed", True),
    ("ncf-fp16", G / "ncf.py", 65536, "fp16-mixed", False),
    ("lstm-fp32", P / "lstm.py", 64, "fp32", False),
    *[
        (f"{m}-fp32-b{b}", B / f"{m}.py", b, "fp32", False)
        for m, b in (
            ("mlp", 256),
            ("cnn", 64),
            ("resnet", 64),
            ("mobilenet", 64),
            ("unet", 16),
            ("conv3d", 16),
            ("gru", 64),
            ("lstm", 64),
            ("encoder", 32),
            ("gpt", 16),
            ("vit", 64),
            ("recommender", 2048),
            ("gnnet", 16),
        )
    ],
]
KERNEL_TABLES = (
    "resnet50-fp16-nhwc",
    "bert_large_squad-fp16",
    "efficientnet_b0-tf32",
    "gru-fp32-b64",
    "mobilenet_v2-fp16",
    "recommender-fp32-b2048",
    "bert_base-bf16",
    "resnet50-fp32",
)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def environment() -> dict:
    import torch

    env = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "device": torch.cuda.get_device_name(),
        "python": sys.version.split()[0],
        "date": time.strftime("%Y-%m-%d"),
    }
    try:
        env["nvidia_smi"] = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,memory.total",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        env["nvidia_smi"] = f"unavailable: {exc}"
    return env


def run(out: Path, deadline_s: float, only: set[str] | None, device: str = "cuda") -> None:
    import torch

    from advisor.calibration import session
    from advisor.calibration.overlay import device_id
    from advisor.profiler.profile import profile_model
    from advisor.profiler.schema import save_profile

    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    (out / "profiles").mkdir(exist_ok=True)
    env = environment() if device == "cuda" else {"device": device}
    (out / "environment.json").write_text(json.dumps(env, indent=1) + "\n")
    log(f"environment: {env}")
    if only is None or "calibrate" in only:
        try:
            data, m = session.calibrate(device, tick=lambda s: log(f"calibrate: {s}"))
            path = out / f"calibration-{device_id(m)}.yaml"
            session.save(data, path, force=True)
            raw = dataclasses.asdict(m)  # the measurements, to rebuild the overlay without the GPU
            (out / f"measurements-{device_id(m)}.json").write_text(json.dumps(raw) + "\n")
            log(f"calibration: {m.seconds:.1f} s -> {path.name}; warnings {m.warnings}")
        except Exception:  # noqa: BLE001 - a benchmark run: keep going, the log has the traceback
            log("calibration FAILED:\n" + traceback.format_exc())
    scratch = Path(tempfile.mkdtemp())
    for name, path, batch, precision, nhwc in MODELS:
        if only is not None and name not in only:
            continue
        if time.perf_counter() - start > deadline_s:
            log(f"deadline: stopping before {name}")
            break
        t0 = time.perf_counter()
        try:
            prof = profile_model(
                model_file(path, nhwc, scratch),
                batch_size=batch,
                device=device,
                precision=precision,
                warmup=WARMUP,
                repeats=REPEATS,
                name=name,
            )
            save_profile(prof, out / "profiles" / f"{name}.yaml")
            t = prof.timing
            log(
                f"{name}: step {t.step_time_s * 1e3:.2f} ms (fwd {t.forward_s * 1e3:.2f}, "
                f"bwd {t.backward_s * 1e3:.2f}, opt {t.optimizer_s * 1e3:.2f}); "
                f"{batch / t.step_time_s:,.0f} samples/s; "
                f"peak {(prof.memory.measured_peak_bytes or 0) / 1e9:.1f} GB; {time.perf_counter() - t0:.1f} s"
            )
        except Exception:  # noqa: BLE001
            log(f"{name} FAILED:\n" + traceback.format_exc())
        finally:
            if device == "cuda":
                torch.cuda.empty_cache()
    for name in KERNEL_TABLES:
        if only is not None and name not in only:
            continue
        if time.perf_counter() - start > deadline_s:
            break
        try:
            kernel_table(name, out, scratch)
        except Exception:  # noqa: BLE001
            log(f"kernel table {name} FAILED:\n" + traceback.format_exc())
    log(f"done in {time.perf_counter() - start:.1f} s")


def model_file(path: Path, nhwc: bool, scratch: Path) -> Path:
    """The model file to run: `path`, or its channels-last wrapper (published.py's) written into `scratch`."""
    if not nhwc:
        return path
    wrapped = scratch / f"{path.stem}_nhwc.py"
    wrapped.write_text(CHANNELS_LAST.format(path=str(path)))
    return wrapped


def kernel_table(name: str, out: Path, scratch: Path) -> None:
    """torch.profiler's CUDA kernels of 3 training steps of one model of MODELS, by total time, into
    DIR/kernels-<name>.txt: where the time of a step goes, kernel by kernel."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from advisor.profiler.device import low_dtype, matmul_precision
    from advisor.profiler.model_file import load_model_file
    from advisor.profiler.step import build, train_step

    _, path, batch, precision, nhwc = next(m for m in MODELS if m[0] == name)
    mf = load_model_file(model_file(path, nhwc, scratch))
    model, data, opt, _ = build(mf, "cuda", batch, precision, None)
    low = low_dtype(precision)

    def step():
        train_step(mf, model, data, opt, "cuda", low)

    with matmul_precision(precision, "cuda"):
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                step()
            torch.cuda.synchronize()
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=60, max_name_column_width=90)
    (out / f"kernels-{name}.txt").write_text(table)
    log(f"kernel table {name} written")


# Families, as in benchmarks/accuracy.py: decisions about the calibrated GPU path (what a calibration measures, what
# it takes from the catalog) may look at TUNING rows only; the README reports the others.
TUNING = {"mlp", "resnet", "resnet50", "mobilenet", "mobilenet_v2", "lstm", "gpt", "gpt2_124m", "vit", "vit_b16"}


def family(name: str) -> str:
    return name.split("-")[0]


def collect_runs(folders: list[Path], out: Path) -> None:
    """DIR/runs.csv: the measured step and phases of every profile of each run folder, run by run (the spread)."""
    from advisor.profiler.schema import load_profile

    rows = []
    for run, folder in enumerate(folders, 1):
        for path in sorted(folder.glob("profiles/*.yaml")):
            t = load_profile(path).timing
            ms = (t.step_time_s, t.forward_s, t.backward_s, t.optimizer_s)
            keys = ("step_ms", "forward_ms", "backward_ms", "optimizer_ms")
            rows.append({"run": run, "name": path.stem, **{k: f"{v * 1e3:.4g}" for k, v in zip(keys, ms, strict=True)}})
    from advisor.io import write_csv

    fields = ["run", "name", "step_ms", "forward_ms", "backward_ms", "optimizer_ms"]
    write_csv(out / "runs.csv", rows, "timed runs", fields)  # the header even when no run had steps


def run_steps(folder: Path) -> dict[str, list[float]]:
    """name -> the measured step (ms) of each run in DIR/runs.csv."""
    steps: dict[str, list[float]] = {}
    path = folder / "runs.csv"
    if path.is_file():
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                steps.setdefault(r["name"], []).append(float(r["step_ms"]))
    return steps


def environment_of(folder: Path) -> dict:
    """DIR/environment.json (what `run` recorded of the machine), {} without one."""
    path = folder / "environment.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def summary(rows: list[dict], key: str) -> dict | None:
    errs = [r[key] for r in rows if r.get(key) is not None]
    if not errs:
        return None
    return {
        "rows": len(errs),
        "median": statistics.median(abs(e) for e in errs),
        "max": max(abs(e) for e in errs),
        "mean": statistics.mean(errs),
    }


def report(folder: Path, write: bool) -> None:
    from advisor import api
    from advisor.estimator.bands import workload_kind
    from advisor.profiler.schema import load_profile

    cal = sorted(folder.glob("calibration-*.yaml"))
    shipped = api.catalog()
    calibrated = api.catalog(cal) if cal else None
    cal_id = cal[0].stem.removeprefix("calibration-") if cal else None
    steps = run_steps(folder)
    spread = {k: max(v) / min(v) for k, v in steps.items() if len(v) > 1}  # slowest / fastest step
    runs = max((len(v) for v in steps.values()), default=1)
    rows = []
    for path in sorted(folder.glob("profiles/*.yaml")):
        prof = load_profile(path)
        t = prof.timing
        if t is None:
            continue
        row = {
            "name": prof.name,
            "set": "tuning" if family(prof.name) in TUNING else "report",
            "precision": prof.precision,
            "batch": t.batch_size,
            "measured_ms": t.step_time_s * 1e3,
            "spread": spread.get(prof.name),
            "kind": workload_kind(prof),
        }
        for label, cat, ident in (("catalog", shipped, t.catalog_device), ("calibrated", calibrated, cal_id)):
            if cat is None or ident is None:
                continue
            est = api.estimate(
                prof, ident, precision=prof.precision, micro_batch=t.batch_size, global_batch=t.batch_size, cat=cat
            )
            seconds = sum(est.phases[p].seconds for p in PHASES)
            row[f"{label}_device"] = ident
            row[f"{label}_ms"] = seconds * 1e3
            row[f"{label}_error"] = (seconds - t.step_time_s) / t.step_time_s
        rows.append(row)
    nan = float("nan")
    for r in rows:
        print(
            f"{r['name']:30s} {r['set']:7s} {r['measured_ms']:9.2f} ms  catalog {r.get('catalog_error', nan):+7.1%}"
            f"  calibrated {r.get('calibrated_error', nan):+7.1%}  spread {r['spread'] or nan:.2f}"
        )
    lines = []
    for label in ("calibrated", "catalog"):
        for which in ("report", "tuning"):
            s = summary([r for r in rows if r["set"] == which], f"{label}_error")
            if s:
                lines.append(
                    f"| {label} | {which} | {s['rows']} | {s['median']:.0%} | {s['max']:.0%} | {s['mean']:+.0%} |"
                )
                print(lines[-1])
    if not write:
        return
    write_bands(rows, environment_of(folder))
    fields = ["name", "set", "kind", "precision", "batch", "measured_ms", "spread"]
    fields += [f"{a}_{b}" for a in ("catalog", "calibrated") for b in ("device", "ms", "error")]
    from advisor.io import write_csv

    shown = [{k: (f"{r[k]:.4g}" if isinstance(r.get(k), float) else r.get(k, "")) for k in fields} for r in rows]
    write_csv(folder / "validation.csv", shown, "validation rows")
    readme(rows, lines, environment_of(folder), runs)


def write_bands(rows: list[dict], env: dict) -> None:
    """catalog/accuracy-gpu-local.yaml: the error band of estimates on a calibrated GPU (calibrated-gpu), from the
    report rows' calibrated errors, over all kinds and per kind of workload with two rows or more."""
    import yaml

    from advisor.estimator.bands import band_entry
    from advisor.io import write_atomic

    report = [r for r in rows if r["set"] == "report" and r.get("calibrated_error") is not None]
    entries = []
    for kind in ("any", *sorted({r["kind"] for r in report})):
        group = [r for r in report if kind == "any" or r["kind"] == kind]
        if kind != "any" and len(group) < 2:
            continue
        basis = (
            f"median |error| of {len(group)} {'' if kind == 'any' else kind + ' '}training steps of "
            f"report-set models on a calibrated {env.get('device', 'GPU')} (benchmarks/gpu_local.py)"
        )
        source = "benchmarks/gpu_local.py over benchmarks/results/gpu-local"
        as_of = env.get("date") or time.strftime("%Y-%m-%d")
        # step-time errors: + where the estimate is too slow, so negated for the lean
        fast = [-r["calibrated_error"] for r in group]
        entries.append(band_entry(f"gpu-calibrated-{kind}", "calibrated-gpu", kind, fast, basis, source, as_of))
    head = "# Generated by benchmarks/gpu_local.py report from its report-set rows: do not edit.\n"
    write_atomic(BANDS, head + yaml.safe_dump({"accuracy": entries}, sort_keys=False, width=120), "bands")


def readme(rows: list[dict], lines: list[str], env: dict, runs: int) -> None:
    """The summary and the per-model table into README.md between the gpu-local markers."""
    s = [r["spread"] for r in rows if r.get("spread")]
    out = [
        BEGIN,
        f"Measured on one {env.get('device', 'GPU')} ({env.get('date', '')}, torch {env.get('torch', '?')}, cuDNN "
        f"{env.get('cudnn', '?')}); error = (estimated - measured) / measured step time; calibrated: the machine's own "
        "`advisor calibrate --device cuda`; catalog: its datasheet entry and family efficiency, as without "
        f"calibrating. Spread over {runs} runs (slowest / fastest step): median "
        f"{statistics.median(s):.2f}, max {max(s):.2f}."
        if s
        else "",
        "",
        "| estimate | set | rows | median abs. error | max | mean signed |",
        "|---|---|---:|---:|---:|---:|",
        *lines,
        "",
        "| model | set | precision | batch | measured | catalog | calibrated |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (r["set"] != "report", r["name"])):
        cells = [f"{r[k]:+.0%}" if r.get(k) is not None else "" for k in ("catalog_error", "calibrated_error")]
        out.append(
            f"| {r['name']} | {r['set']} | {r['precision']} | {r['batch']} | {r['measured_ms']:.3g} ms | "
            + " | ".join(cells)
            + " |"
        )
    out.append(END)
    path = ROOT / "README.md"
    text = path.read_text()
    if BEGIN not in text or END not in text:
        print("README.md has no gpu-local markers: not written", file=sys.stderr)
        return
    head, rest = text.split(BEGIN, 1)
    path.write_text(head + "\n".join(out) + rest.split(END, 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("run", "report", "runs"))
    parser.add_argument("folders", nargs="*", type=Path, help="runs: the run folders, in order")
    parser.add_argument("--out", "--dir", dest="dir", type=Path, default=OUT)
    parser.add_argument("--deadline", type=float, default=600.0, help="run: start no model after this many seconds")
    parser.add_argument("--only", default=None, help="run: comma-separated model names (and/or 'calibrate')")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--device", default="cuda", help="run: cuda (cpu only to try the script out)")
    a = parser.parse_args()
    if a.mode == "run":
        run(a.dir, a.deadline, set(a.only.split(",")) if a.only else None, a.device)
    elif a.mode == "runs":
        collect_runs(a.folders, a.dir)
    else:
        report(a.dir, not a.no_write)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
