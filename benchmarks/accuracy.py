"""Measured vs predicted training-step time on this machine's CPU, calibrated and from datasheet figures.

    python benchmarks/accuracy.py [--threads 2] [--no-readme]

1. Calibrates the CPU (as `advisor calibrate`) into benchmarks/results/calibration-cpu.yaml.
2. Writes a datasheet-style entry for the same CPU into benchmarks/results/datasheet-cpu.yaml: peak =
   cores x fp32 FLOPs per cycle (from the lscpu flags, per the table in catalog/devices/cpus.yaml) x the
   clock in /proc/cpuinfo, memory bandwidth = the catalog's EPYC 9654 scaled per core, with the shipped
   x86-cpu efficiency profile: what advisor would say about this CPU without calibrating it.
3. For each model in benchmarks/models at two batch sizes: times real fp32 training steps (median of 7
   after 3 warm-up steps) and estimates the same step on both entries.
4. Writes benchmarks/results/accuracy-cpu.csv and the tables into README.md between the accuracy markers.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results"
MODELS = ROOT / "benchmarks" / "models"
CASES = [
    ("mlp", (64, 256)),
    ("resnet", (8, 32)),
    ("mobilenet", (8, 32)),
    ("lstm", (8, 32)),
    ("gpt", (4, 16)),
    ("vit", (8, 32)),
]
BEGIN, END = "<!-- accuracy:begin -->", "<!-- accuracy:end -->"


def cpu_flags() -> tuple[str, set[str], float]:
    vendor, flags, mhz = "", set(), 0.0
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "vendor_id" and not vendor:
            vendor = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
        elif key == "cpu MHz" and not mhz:
            mhz = float(value)
    return vendor, flags, mhz


def datasheet_overlay(cat, cores: int) -> dict:
    """A paper entry for `cores` cores of this CPU (one per torch thread), derived as
    catalog/devices/cpus.yaml derives its peaks."""
    vendor, flags, mhz = cpu_flags()
    # cpus.yaml: Intel AVX-512 cores have 2 x 512-bit FMA (64 fp32 FLOPs/cycle); AMD Zen 4 runs AVX-512 on
    # 2 x 256-bit pipes and AVX2 cores have 2 x 256-bit FMA (32).
    per_cycle = 64 if ("avx512f" in flags and vendor == "GenuineIntel") else 32 if "fma" in flags else 16
    fp32 = cores * per_cycle * mhz * 1e6
    ref = cat.devices["epyc-9654"]
    bandwidth = ref.memory_bandwidth / ref.cores * cores
    vector = {"fp32": f"{fp32:.4g}"}
    if "avx512_bf16" in flags:
        vector["bf16"] = f"{2 * fp32:.4g}"
    return {
        "devices": [
            {
                "id": "datasheet-local-cpu",
                "name": "this CPU from datasheet-style figures",
                "vendor": "unknown",
                "kind": "cpu",
                "efficiency": "x86-cpu",
                "cores": cores,
                "threads_per_core": 1,
                "memory_bandwidth": f"{bandwidth:.4g}",
                "vector_flops": vector,
                "tdp_watts": 1,
                "launch_year": dt.date.today().year,
                "source": "derived by benchmarks/accuracy.py",
                "as_of": dt.date.today(),
                "notes": f"{cores} cores x {per_cycle} fp32 FLOPs/cycle x {mhz:.0f} MHz; bandwidth = epyc-9654's "
                f"{ref.memory_bandwidth / 1e9:.1f} GB/s / {ref.cores} cores x {cores}",
            }
        ]
    }


def calibrate(path: Path) -> float:
    from advisor.calibration import bench, overlay
    from advisor.io import dump_yaml, write_atomic

    start = time.perf_counter()
    m = bench.run("cpu", tick=lambda s: print(f"  calibrate: {s}", file=sys.stderr))
    phase = overlay.fit_phase_overhead(overlay.build(m), m)
    m.seconds = time.perf_counter() - start
    write_atomic(path, dump_yaml(overlay.build(m, phase)), "calibration")
    return m.seconds


def measure(path: Path, batch: int, threads: int) -> dict[str, float]:
    """Real fp32 AdamW steps: 3 warm-up, then the median of 7 per phase. On one thread the clock is the
    process's CPU time (time slices lost to other tenants of a shared machine do not count); otherwise
    wall time."""

    from advisor.profiler.model_file import load_model_file
    from advisor.profiler.step import build, forward_loss

    now = time.process_time if threads == 1 else time.perf_counter
    mf = load_model_file(path)
    model, data, opt, _ = build(mf, "cpu", batch, "fp32", None)
    phases: list[tuple[float, float, float]] = []
    for i in range(10):
        opt.zero_grad(set_to_none=True)
        t0 = now()
        loss = forward_loss(mf, model, data)
        t1 = now()
        loss.backward()
        t2 = now()
        opt.step()
        t3 = now()
        if i >= 3:
            phases.append((t1 - t0, t2 - t1, t3 - t2))
    return {p: statistics.median(x[i] for x in phases) for i, p in enumerate(("forward", "backward", "optimizer"))}


def summary(rows: list[dict], key: str) -> tuple[float, float]:
    errors = [abs(r[key]) for r in rows]
    return statistics.median(errors), max(errors)


def markdown(rows: list[dict], meta: dict) -> str:
    cal_med, cal_max = summary(rows, "calibrated_error")
    ds_med, ds_max = summary(rows, "datasheet_error")
    lines = [
        f"Measured on {meta['cpu']} ({meta['threads']} torch thread{'s' * (meta['threads'] > 1)}, fp32, AdamW, "
        f"median of 7 steps after 3; {meta['clock']}), "
        f"{meta['date']}; benchmark wall time {meta['wall_s']:.0f} s (calibration {meta['calibration_s']:.0f} s).",
        "",
        "| model | batch | measured | calibrated | error | datasheet | error |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['measured_s'] * 1e3:.1f} ms | {r['calibrated_s'] * 1e3:.1f} ms | "
            f"{r['calibrated_error']:+.0%} | {r['datasheet_s'] * 1e3:.1f} ms | {r['datasheet_error']:+.0%} |"
        )
    lines += [
        "",
        f"Absolute error, calibrated (`local-cpu`): median **{cal_med:.0%}**, maximum **{cal_max:.0%}**. "
        f"Datasheet-style (`x86-cpu` efficiencies on a derived peak): median {ds_med:.0%}, maximum {ds_max:.0%}.",
    ]
    return "\n".join(lines)


def write_readme(text: str) -> None:
    readme = ROOT / "README.md"
    body = readme.read_text(encoding="utf-8")
    if BEGIN not in body or END not in body:
        print(f"README.md has no {BEGIN} ... {END} markers: tables not written", file=sys.stderr)
        return
    new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: f"{BEGIN}\n{text}\n{END}", body, flags=re.S)
    readme.write_text(new, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-readme", action="store_true")
    parser.add_argument("--only", help="comma-separated model names")
    parser.add_argument("--calibration", help="reuse this calibration overlay instead of calibrating")
    args = parser.parse_args()
    import torch

    from advisor import api
    from advisor.io import dump_yaml, write_atomic
    from advisor.profiler.device import cpu_name
    from advisor.profiler.profile import profile_model

    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    RESULTS.mkdir(parents=True, exist_ok=True)
    cal_path, ds_path = RESULTS / "calibration-cpu.yaml", RESULTS / "datasheet-cpu.yaml"
    if args.calibration:
        cal_path, cal_s = Path(args.calibration), 0.0
    else:
        cal_s = calibrate(cal_path)
    write_atomic(ds_path, dump_yaml(datasheet_overlay(api.catalog(), args.threads)), "datasheet entry")
    cat = api.catalog([cal_path, ds_path])
    rows = []
    only = set(args.only.split(",")) if args.only else None
    for name, batches in CASES:
        if only and name not in only:
            continue
        for b in batches:
            path = MODELS / f"{name}.py"
            prof = profile_model(path, batch_size=b, device="cpu", precision="fp32", repeats=0)
            t = measure(path, b, args.threads)
            measured = sum(t.values())
            cal = api.estimate(prof, "local-cpu", precision="fp32", micro_batch=b, cat=cat)
            ds = api.estimate(prof, "datasheet-local-cpu", precision="fp32", micro_batch=b, cat=cat)
            row = {
                "model": name,
                "batch": b,
                "measured_s": measured,
                **{f"measured_{p}_s": t[p] for p in ("forward", "backward", "optimizer")},
                "calibrated_s": cal.step_time_s,
                **{f"calibrated_{p}_s": cal.phases[p].seconds for p in ("forward", "backward", "optimizer")},
                "datasheet_s": ds.step_time_s,
            }
            row["calibrated_error"] = (row["calibrated_s"] - measured) / measured
            row["datasheet_error"] = (row["datasheet_s"] - measured) / measured
            rows.append(row)
            print(
                f"{name:10s} b={b:4d} measured {measured * 1e3:8.1f} ms  calibrated {cal.step_time_s * 1e3:8.1f} ms "
                f"({row['calibrated_error']:+.0%})  datasheet {ds.step_time_s * 1e3:8.1f} ms "
                f"({row['datasheet_error']:+.0%})  phases m/p "
                + " ".join(
                    f"{row[f'measured_{p}_s'] * 1e3:.1f}/{row[f'calibrated_{p}_s'] * 1e3:.1f}"
                    for p in ("forward", "backward", "optimizer")
                ),
                file=sys.stderr,
            )
    wall = time.perf_counter() - start
    meta = {
        "cpu": cpu_name(),
        "threads": args.threads,
        "date": dt.date.today().isoformat(),
        "wall_s": wall,
        "calibration_s": cal_s,
        "clock": "process CPU time" if args.threads == 1 else "wall time",
    }
    with open(RESULTS / "accuracy-cpu.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()} for r in rows)
    text = markdown(rows, meta)
    print(text)
    if not args.no_readme and not only:
        write_readme(text)


if __name__ == "__main__":
    main()
