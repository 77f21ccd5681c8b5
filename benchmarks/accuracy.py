"""Measured vs predicted training-step time on this machine's CPU, calibrated and from datasheet figures, on
model families the estimator was not tuned on, at one thread and at torch's default thread count.

    python benchmarks/accuracy.py [--threads 1,2] [--only NAME,...] [--processes N] [--wait-quiet MINUTES]
                                  [--calibration FILE] [--no-write]

For each thread count:
1. Calibrates the CPU (as `advisor calibrate --sweeps 5` does) into benchmarks/results/calibration-cpu-<n>t.yaml,
   its sweeps (one per process of step 3) taking turns with the rounds of timed steps of step 3 (sweep, round,
   sweep, round, ...; the tiny nets' fixed costs last), so that calibration and steps sample the same stretch of a
   shared machine's time (`advisor calibrate --spread` is the same for a user). With --calibration, the rows only.
2. Writes a datasheet-style entry for the same CPU (benchmarks/results/datasheet-cpu.yaml): peak = cores x fp32
   FLOPs per cycle (lscpu flags) x the /proc/cpuinfo clock, bandwidth = the catalog's EPYC 9654 per core, the
   shipped x86-cpu efficiencies: what advisor says about this CPU without calibrating it.
3. For each model of benchmarks/models at two batch sizes: times real fp32 training steps in five fresh Python
   processes (--processes), in rounds over all the rows so that a row's processes lie minutes apart, as a user's
   training starts (in each, 7 steps after 3 warm-up ones:
   each phase's median, as `advisor validate` shows it: on one thread on the process's CPU clock, on more on the
   wall clock; the row takes the median over the processes and records their spread), counting the memory each
   step faults in, and estimates the same step on both entries.
The models are split by family: TUNING families (and the calibration's own nets) are the only ones any
efficiency figure or model decision may be fitted on; REPORT families are reported. Writes
benchmarks/results/accuracy-cpu.csv, catalog/accuracy-cpu.yaml (the error bands estimates of calibrated and
uncalibrated CPUs carry, from the report rows) and the tables into README.md between the accuracy markers.
Every run records the 1-minute load average beside it: timings on a busy machine are not comparable.

Every full run also appends its rows to benchmarks/results/accuracy-cpu-runs.csv with the run's start, the CPU
and an id of the estimator it ran (`estimator_id`: a digest of advisor/'s code, the catalog's figures and the
models). One run on a shared machine is a noisy sample (with the one-thread estimate unchanged, its report median
moved from 11 % to 7 % between two runs), so the error bands are taken over every recorded run of the same
estimator on the same CPU, this one included; any change to the code, the figures or the models starts afresh.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results"
MODELS = ROOT / "benchmarks" / "models"
BANDS = ROOT / "catalog" / "accuracy-cpu.yaml"
HISTORY = RESULTS / "accuracy-cpu-runs.csv"
# what the history keeps of a row, after the run's start, the estimator's id and the CPU
HISTORY_FIELDS = (
    *("threads", "set", "model", "kind", "batch", "measured_s", "calibrated_s", "datasheet_s"),
    *("calibrated_error", "datasheet_error"),
)
TUNING = [
    ("mlp", (64, 256)),
    ("resnet", (8, 32)),
    ("mobilenet", (8, 32)),
    ("lstm", (8, 32)),
    ("gpt", (4, 16)),
    ("vit", (8, 32)),
    ("densenet", (4, 16)),
    # reported until 2026-12-05, when their per-op breakdowns (a 3D max pool priced at a twentieth of its time,
    # 3x3 stride-1 pools at two thirds) led to the pooling calibration: tuning families since
    ("conv3d", (8, 16)),
    ("inception", (8, 32)),
    # reported until 2026-12-05, when its one-thread miss (+25 %, AdamW temporaries the replay faulted in and the
    # process kept) led to the replay's starting thresholds (profiler.heap.process_threshold): tuning since
    ("autoenc", (64, 256)),
    # reported from 2026-12-05 (written as an unseen check) until its 7x7 depthwise backward, priced like a dense
    # layer's at a tenth of its time, led to the depthwise calibration the same day: tuning since
    ("convnext", (8, 32)),
    # reported until 2026-12-05, when its per-layer breakdown (1x1 layers with 12-28 channels in or out priced at a
    # third of their time, the calibration's one such layer running 1.0 or 3.8 ms by turns) led to the calibration's
    # added 1x1 layers with few channels: tuning since
    ("squeezenet", (16, 32)),
]
REPORT = [
    ("cnn", (32, 64)),
    ("unet", (8, 16)),
    ("gru", (8, 32)),
    ("encoder", (4, 16)),
    ("recommender", (256, 1024)),
    ("gnnet", (4, 16)),
    ("audio1d", (8, 32)),
    ("tcn", (4, 16)),
    ("mixer", (8, 32)),
    ("stemnet", (8, 32)),
    ("vggavg", (16, 64)),
    # written after the GEMM-layout calibration and the replay's starting thresholds (2026-12-05): unseen checks
    ("seq2seq", (4, 16)),
    # written after the depthwise calibration (2026-12-05): an unseen check, its 9x9 kernels beyond the calibrated 7x7
    ("convmixer", (8, 32)),
    # written after the calibration's added 1x1 layers with few channels (2026-12-05): an unseen check
    ("nin", (8, 32)),
]
BEGIN, END = "<!-- accuracy:begin -->", "<!-- accuracy:end -->"
PHASES = ("forward", "backward", "optimizer")
# fresh processes timed per row; the row takes their median. Five since run 39: with three, a row's processes
# differed by a median of 15-29 % on the development VM's Xeon (runs 37-38), as much as the report rows' errors
PROCESSES = 5
# a workload kind's error band narrower than all kinds' only from the rows of at least this many models: the two
# batches of one model say how far off that model is, not how far the kind's are (run 66: the MLP-Mixer's two rows
# gave the mlp kind +-1 % at one thread, and a graph network written as a user's, of that kind, came out 6 % off)
MIN_KIND_MODELS = 2
# every row: (set, model, batch)
CASES = [(s, n, b) for s, group in (("tuning", TUNING), ("report", REPORT)) for n, bs in group for b in bs]


def profile(name: str, batch: int):
    """The fp32 CPU profile of benchmarks/models/NAME.py at `batch` (counts only: nothing timed)."""
    from advisor.profiler.profile import profile_model

    return profile_model(MODELS / f"{name}.py", batch_size=batch, device="cpu", precision="fp32", repeats=0)


def load() -> float:
    return os.getloadavg()[0]


def wait_quiet(minutes: float, threshold: float = 1.0) -> None:
    """Sleep in one-minute steps until the 1-minute load average is below `threshold`, at most `minutes`."""
    deadline = time.time() + 60 * minutes
    while load() >= threshold and time.time() < deadline:
        print(f"  load {load():.2f}: waiting for a quiet machine", file=sys.stderr)
        time.sleep(60)


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


def calibrate_tick(step: str) -> None:
    print(f"  calibrate: {step}", file=sys.stderr)


def calibrate(path: Path, between=None, sweeps: int | None = None) -> tuple[float, list[str]]:
    """`advisor calibrate` into `path`; with `between`, that runs after each of the `sweeps` sweeps (see run_threads),
    in one attempt (the rounds of steps between are not timed twice), else up to two (a disturbed first run measured
    again)."""
    from advisor.calibration import session
    from advisor.io import dump_yaml, write_atomic

    attempts = 1 if between else 2
    data, m = session.calibrate("cpu", tick=calibrate_tick, attempts=attempts, sweeps=sweeps, between=between)
    write_atomic(path, dump_yaml(data), "calibration")
    return m.seconds, m.warnings


def rotation(n: int, k: int, rounds: int) -> list[int]:
    """The order of n cases in round k of `rounds`: the list started k/rounds of the way along, so that each row's
    processes lie at different distances from the calibration sweep before their round (in order every round, the
    report rows, last, always ran furthest from it: at two threads their signed median error came out below the
    tuning rows' in eight of the nine runs to run 40, by a median of 7 points; at one thread by 2)."""
    start = (k * n) // max(rounds, 1) % max(n, 1)
    return [*range(start, n), *range(start)]


class Rounds:
    """measure_here for each (model file, batch) of `cases` in fresh Python processes, one round a call, as a
    user's training or `advisor validate` starts: in this long-lived one, what a step faults in depends on what ran
    before it (glibc malloc's thresholds for handing freed memory back to the OS grow with the blocks already
    freed); one in-process run measured the recommender at 0 MB per step, fresh processes at 38-51 MB.

    One process per case a round, in a rotated order (`rotation`), so that a row's processes lie minutes apart: on
    this shared VM a slow spell lasts longer than one row's processes run back to back (run 24 measured the GRU at
    32 at 148.9 ms with its three processes 1 % apart, each a few seconds after the last; the same three, timed
    again later that day, 127-129 ms). In `rows`, each figure is the median over a row's processes, "spread" is
    (slowest - fastest) / median of their step totals and "load" the mean 1-minute load average before them."""

    def __init__(self, cases: list[tuple[Path, int]], threads: int, processes: int):
        self.cases, self.threads, self.processes = cases, threads, processes
        self.runs: list[list[dict]] = [[] for _ in cases]
        self.loads: list[list[float]] = [[] for _ in cases]

    def round(self, k: int) -> None:
        for i in rotation(len(self.cases), k, self.processes):
            path, batch = self.cases[i]
            print(f"  {self.threads}t round {k + 1}/{self.processes}: {path.stem} at {batch}", file=sys.stderr)
            self.loads[i].append(load())
            cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", str(path), str(batch), str(self.threads)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"timing {path.name} at batch {batch} failed:\n{done.stderr[-2000:]}")
            self.runs[i].append(json.loads(done.stdout.strip().splitlines()[-1]))

    def rows(self) -> list[dict[str, float]]:
        out = []
        for row_runs, row_loads in zip(self.runs, self.loads, strict=True):
            row = {key: statistics.median(r[key] for r in row_runs) for key in row_runs[0]}
            totals = [sum(r[p] for p in PHASES) for r in row_runs]
            row["spread"] = (max(totals) - min(totals)) / statistics.median(totals)
            row["load"] = statistics.mean(row_loads)
            out.append(row)
        return out


def measure_here(path: Path, batch: int, threads: int) -> dict[str, float]:
    """Real fp32 steps: 3 warm-up, then 7 timed; the median per phase, as `advisor validate` measures it: one
    thread on the process's CPU clock (time slices lost to other processes do not count), more on the wall clock.
    Also "faults": the median bytes per timed step the OS faulted in (advisor validate's page-fault note), and
    "fastest_step": each phase's fastest of the 7 on the same clock, summed (what two-thread rows were until run 65,
    when calibration kept each measurement's fastest round)."""
    import torch

    from advisor.profiler.model_file import load_model_file
    from advisor.profiler.profile import fault_bytes, minor_faults, thread_probe
    from advisor.profiler.step import PhaseClock, build, train_step

    torch.set_num_threads(threads)
    clock = PhaseClock(time.process_time if threads == 1 else time.perf_counter, "cpu")
    mf = load_model_file(path)
    model, data, opt, _ = build(mf, "cpu", batch, "fp32", None)
    phases: list[tuple[float, float, float]] = []
    faults: list[int] = []
    probe = thread_probe()  # the threads' state before and after the steps
    before = probe()
    for i in range(10):
        f0 = minor_faults() or 0
        train_step(mf, model, data, opt, "cpu", None, clock)
        if i >= 3:
            phases.append(clock.phases())
            faults.append((minor_faults() or 0) - f0)
    out = {p: statistics.median(x[i] for x in phases) for i, p in enumerate(PHASES)}
    fastest = sum(min(x[i] for x in phases) for i in range(len(PHASES)))
    probes = [t for t in (before, probe()) if t is not None]
    state = statistics.mean(probes) if probes else 0.0  # 0 on one thread
    return {**out, "faults": fault_bytes(faults) or 0.0, "fastest_step": fastest, "parallel_op": state}


def run_threads(
    threads: int, cases, profiles: dict, reuse: Path | None, processes: int = PROCESSES, out: Path = RESULTS
) -> tuple[list[dict], dict]:
    """The rows at `threads`, estimated on a calibration made beside them (or on `reuse`); the calibration and the
    datasheet entry are written into `out`."""
    import torch

    from advisor import api
    from advisor.estimator.bands import workload_kind
    from advisor.io import dump_yaml, write_atomic

    torch.set_num_threads(threads)
    cal_path = reuse or out / f"calibration-cpu-{threads}t.yaml"
    load_before = load()
    profiled = False
    for _, name, batch in cases:
        if (name, batch) not in profiles:  # counts do not depend on the thread count
            profiles[(name, batch)] = profile(name, batch)
            profiled = True
    if profiled and not reuse:
        # the profiling just done holds the 1-minute load up: the one-thread calibration of runs 41 and 42 started at
        # 0.50 and 0.51 per core and was flagged for it
        from advisor.calibration import session

        session.settle(calibrate_tick)
    rounds = Rounds([(MODELS / f"{name}.py", batch) for _, name, batch in cases], threads, processes)
    if reuse:
        cal_s, warnings = 0.0, []
        for k in range(processes):
            rounds.round(k)
    else:
        # the calibration's sweeps and the rounds of timed steps take turns (sweep, round, sweep, round, ...), so
        # that both sample the same stretch of this shared machine's time: calibrated before the rows, the
        # calibration caught one state of a host that changes speed by tens of percent over minutes, and the rows
        # came out all under or all over by turns (runs 35 and 36)
        cal_s, warnings = calibrate(cal_path, between=rounds.round, sweeps=processes)  # its own time, less the rounds
    ds_path = out / "datasheet-cpu.yaml"
    write_atomic(ds_path, dump_yaml(datasheet_overlay(api.catalog(), threads)), "datasheet entry")
    cat = api.catalog([cal_path, ds_path])
    timed = rounds.rows()
    rows = []
    for (split, name, batch), t in zip(cases, timed, strict=True):
        prof = profiles[(name, batch)]
        before = t.pop("load")
        fault_bytes = t.pop("faults")
        fastest_step = t.pop("fastest_step")
        probe = t.pop("parallel_op")
        spread = t.pop("spread")
        measured = sum(t.values())
        cal = api.estimate(prof, "local-cpu", precision="fp32", micro_batch=batch, cat=cat)
        # what the estimate priced of the step's page faults: the profile's count (its fresh processes; a replay of
        # the tensors' allocations before 2026-12-06, the column's name) at the calibrated rate
        first_touch = cat.efficiency[cat.devices["local-cpu"].efficiency].first_touch_bandwidth
        replayed = max(0.0, prof.memory.step_fault_bytes.at(batch)) if prof.memory.step_fault_bytes else 0.0
        ds = api.estimate(prof, "datasheet-local-cpu", precision="fp32", micro_batch=batch, cat=cat)
        row = {
            "set": split,
            "model": name,
            "kind": workload_kind(prof),
            "batch": batch,
            "threads": threads,
            "load": round(before, 2),
            "measured_s": measured,
            "process_spread": spread,
            **{f"measured_{p}_s": t[p] for p in PHASES},
            "calibrated_s": cal.step_time_s,
            **{f"calibrated_{p}_s": cal.phases[p].seconds for p in PHASES},
            "datasheet_s": ds.step_time_s,
            "page_fault_mb": fault_bytes / 1e6,
            "replayed_fault_mb": replayed / 1e6,
            "fault_s": replayed / first_touch if first_touch else 0.0,
        }
        row["calibrated_error"] = (row["calibrated_s"] - measured) / measured
        row["unpriced_error"] = (row["calibrated_s"] - row["fault_s"] - measured) / measured
        row["parallel_op_us"] = probe * 1e6
        row["fastest_step_s"] = fastest_step
        row["fastest_step_error"] = (row["calibrated_s"] - fastest_step) / fastest_step
        row["datasheet_error"] = (row["datasheet_s"] - measured) / measured
        rows.append(row)
        print(
            f"{threads}t {split:6s} {name:11s} b={batch:4d} load {before:4.1f} measured {measured * 1e3:8.1f} ms  "
            f"calibrated {cal.step_time_s * 1e3:8.1f} ms ({row['calibrated_error']:+.0%})  datasheet "
            f"{ds.step_time_s * 1e3:8.1f} ms ({row['datasheet_error']:+.0%})  faults {fault_bytes / 1e6:.0f} MB  "
            "phases m/p "
            + " ".join(f"{row[f'measured_{p}_s'] * 1e3:.1f}/{row[f'calibrated_{p}_s'] * 1e3:.1f}" for p in PHASES),
            file=sys.stderr,
        )
    probes = cat.efficiency[cat.devices["local-cpu"].efficiency].parallel_op_s or []
    meta = {
        "threads": threads,
        "calibration_s": cal_s,
        "warnings": warnings,
        "load_before": load_before,
        "parallel_op_us": [t * 1e6 for t in probes],
    }
    return rows, meta


def summary(rows: list[dict], key: str) -> tuple[float, float]:
    errors = [abs(r[key]) for r in rows]
    return statistics.median(errors), max(errors)


def state_line(report: list[dict], calibration_us: list[float]) -> str:
    """The report rows grouped by the threads' state they were timed in against the calibration's (validate's
    thread note: a small parallel op STATE_NOTE times slower or faster), each group's median and max |error|."""
    from advisor.calibration.validate import STATE_NOTE, thread_state

    cal = statistics.median(calibration_us)
    groups = {"slower": [], "the same": [], "faster": []}
    for r in report:
        groups[thread_state(r["parallel_op_us"], cal) or "the same"].append(r)
    parts = []
    for label, group in groups.items():
        if group:
            med, worst = summary(group, "calibrated_error")
            lean = sum(r["calibrated_error"] < 0 for r in group)
            parts.append(f"{label}: {len(group)} rows, median {med:.0%}, max {worst:.0%}, {lean} under")
    return (
        f"- threads' state (an add on 40,000 floats, its median around a row's steps against the calibration's "
        f"{cal:.2g} µs, its {len(calibration_us)} probes {min(calibration_us):.2g}-{max(calibration_us):.2g} µs; "
        f"{STATE_NOTE}x or more apart counts as another state), report rows: " + "; ".join(parts)
    )


def table(rows: list[dict]) -> list[str]:
    lines = [
        "| set | model | batch | load | probe | measured | spread | faults (meas. / profile) | calibrated | error "
        "| datasheet | error |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        probe = f"{r['parallel_op_us']:.2g} µs" if r["parallel_op_us"] else "-"
        lines.append(
            f"| {r['set']} | {r['model']} | {r['batch']} | {r['load']:.1f} | {probe} | "
            f"{r['measured_s'] * 1e3:.1f} ms | {r['process_spread']:.0%} | "
            f"{r['page_fault_mb']:.0f} / {r['replayed_fault_mb']:.0f} MB | {r['calibrated_s'] * 1e3:.1f} ms | "
            f"{r['calibrated_error']:+.0%} | "
            f"{r['datasheet_s'] * 1e3:.1f} ms | {r['datasheet_error']:+.0%} |"
        )
    return lines


def markdown(all_rows: list[dict], metas: list[dict], info: dict) -> str:
    from advisor.profiler.device import cpu_name

    lines = [
        f"Measured on {cpu_name()} ({info['date']}, fp32, the models' own optimizers, 7 steps after 3 in each of "
        f"{info['processes']} fresh processes, the median over the processes; "
        f"benchmark wall time {info['wall_s']:.0f} s). The processes ran in rounds over all the rows, a row's "
        "minutes apart. The load column is the 1-minute load average before the row's processes (their mean), the "
        "benchmark's own threads included: rows above about 1 (one thread) or 2 (two threads) shared the machine "
        "with other work.",
        "",
    ]
    for meta in metas:
        rows = [r for r in all_rows if r["threads"] == meta["threads"]]
        report = [r for r in rows if r["set"] == "report"]
        tuning = [r for r in rows if r["set"] == "tuning"]
        n = meta["threads"]
        clock = ("process CPU time" if n == 1 else "wall time") + ", each phase's median of 7 steps"
        lines.append(
            f"**{n} torch thread{'s' * (n > 1)}** ({clock}; calibration {meta['calibration_s']:.0f} s"
            f"{', flagged: ' + '; '.join(meta['warnings']) if meta['warnings'] else ''}):"
        )
        lines.append("")
        for label, group in (("report families", report), ("tuning families", tuning)):
            if group:
                cm, cx = summary(group, "calibrated_error")
                um, ux = summary(group, "unpriced_error")
                dm, dx = summary(group, "datasheet_error")
                typical = ""
                if n > 1:
                    mm, mx = summary(group, "fastest_step_error")
                    typical = f"; against each phase's fastest of 7 instead of its median {mm:.0%} and {mx:.0%}"
                lines.append(
                    f"- {label}: calibrated median |error| **{cm:.0%}**, max **{cx:.0%}** (without pricing the "
                    f"profile's page faults {um:.0%} and {ux:.0%}{typical}); datasheet-style median {dm:.0%}, max "
                    f"{dx:.0%} ({len(group)} runs)"
                )
        pool = [r for r in info.get("pooled", []) if r["threads"] == n]
        runs = runs_of(pool)
        if len(runs) > 1:
            parts = []
            for label, group in (("report", "report"), ("tuning", "tuning")):
                rows_of = [r for r in pool if r["set"] == group]
                if rows_of:
                    med, worst = summary(rows_of, "calibrated_error")
                    parts.append(f"{label} median |error| **{med:.0%}**, max **{worst:.0%}** ({len(rows_of)} rows)")
            lines.append(
                f"- over the {len(runs)} recorded runs of this estimator on this CPU ({', '.join(runs)}; "
                f"benchmarks/results/accuracy-cpu-runs.csv, the error bands' basis): " + "; ".join(parts)
            )
        if meta.get("parallel_op_us") and report:
            lines.append(state_line(report, meta["parallel_op_us"]))
        spreads = sorted(r["process_spread"] for r in rows)
        lines.append(
            f"- spread between the {info['processes']} processes of a row (slowest - fastest over median): median "
            f"{statistics.median(spreads):.0%}, max {spreads[-1]:.0%} ({len(rows)} rows)"
        )
        lines += ["", *table(rows), ""]
    return "\n".join(lines).rstrip()


def estimator_id(root: Path = ROOT) -> str:
    """12 hex digits of a digest over advisor/'s Python files, the catalog's YAML (the bands the benchmarks write
    excepted) and the benchmark's model files, by relative path: equal ids estimate a calibration's rows alike.
    How the rows are timed (this file) is not in it."""
    import hashlib

    digest = hashlib.sha256()
    files = [*root.glob("advisor/**/*.py"), *root.glob("catalog/**/*.yaml"), *root.glob("benchmarks/models/*.py")]
    for path in sorted(f for f in files if not f.name.startswith("accuracy-")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def shown(value):
    """A figure as the result files write it: floats to 6 significant digits, the rest as it is."""
    return f"{value:.6g}" if isinstance(value, float) else value


def history_rows(rows: list[dict], run: str, estimator: str, cpu: str) -> list[dict]:
    """This run's rows as the history keeps them (HISTORY_FIELDS, numbers as `shown`)."""
    return [{"run": run, "estimator": estimator, "cpu": cpu, **{k: shown(r[k]) for k in HISTORY_FIELDS}} for r in rows]


def read_history(path: Path) -> list[dict]:
    """The recorded rows as written (strings), [] without a file."""
    import csv

    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def parsed(rows: list[dict]) -> list[dict]:
    """Recorded rows with their numbers parsed, as `bands` and `markdown` read rows."""
    floats = ("measured_s", "calibrated_s", "datasheet_s", "calibrated_error", "datasheet_error")
    ints = ("threads", "batch")
    return [{**r, **{k: int(r[k]) for k in ints}, **{k: float(r[k]) for k in floats}} for r in rows]


def pooled(history: list[dict], estimator: str, cpu: str) -> list[dict]:
    """The recorded rows of every run of `estimator` on `cpu`."""
    return [r for r in history if r["estimator"] == estimator and r["cpu"] == cpu]


def runs_of(rows: list[dict]) -> list[str]:
    return sorted({r["run"] for r in rows})


def bands(all_rows: list[dict], runs: list[str] | None = None) -> dict:
    """Error bands from the report rows: calibrated CPUs by thread count and workload kind, and the shipped
    x86-cpu profile (datasheet-style) over all kinds. `all_rows` may pool several runs of one estimator (`runs`,
    their starts), which the basis then names."""
    from advisor.estimator.bands import band_entry
    from advisor.profiler.device import cpu_name

    today = dt.date.today().isoformat()
    over = ""
    if runs and len(runs) > 1:
        days = sorted({r[:10] for r in runs})
        when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
        over = f" over {len(runs)} benchmark runs of this estimator ({when})"
    entries = []
    for threads in sorted({r["threads"] for r in all_rows}):
        report = [r for r in all_rows if r["threads"] == threads and r["set"] == "report"]
        groups = {"any": report}
        for r in report:
            groups.setdefault(r["kind"], []).append(r)
        for kind, group in sorted(groups.items()):
            if kind != "any" and len(group) < 2:
                continue
            for applies, key in (("calibrated-cpu", "calibrated_error"), ("x86-cpu", "datasheet_error")):
                if applies == "x86-cpu" and kind != "any":
                    continue
                what = "a calibrated" if applies == "calibrated-cpu" else "an uncalibrated (datasheet-style)"
                ident = f"cpu-{'calibrated' if applies == 'calibrated-cpu' else 'datasheet'}-{kind}-{threads}t"
                basis = (
                    f"median |error| of {len(group)} {'' if kind == 'any' else kind + ' '}training steps of "
                    f"report-set models on {what} {cpu_name()} at {threads} thread{'s' * (threads > 1)}{over} "
                    "(benchmarks/accuracy.py)"
                )
                # step-time errors: + where the estimate is too slow, so negated for the lean
                fast = [-r[key] for r in group]
                entry = band_entry(ident, applies, kind, fast, basis, "benchmarks/accuracy.py", today, threads=threads)
                models = {r["model"] for r in group}
                if kind != "any" and len(models) < MIN_KIND_MODELS:  # one model's rows: not a kind's spread
                    every = statistics.median(abs(r[key]) for r in report)
                    if every > entry["error_band"]:
                        entry["basis"] = (
                            f"held at the median |error| of all {len(report)} report rows ({every:.0%}): its "
                            f"{len(group)} {kind} rows, of one model ({min(models)}), gave "
                            f"{entry['error_band']:.0%}, too few to narrow it; {basis}"
                        )
                        entry["error_band"] = round(every, 3)
                entries.append(entry)
    return {"accuracy": entries}


def write_readme(text: str) -> None:
    from readme_block import write_block  # benchmarks/ is the script's own folder, first on sys.path

    write_block(BEGIN, END, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", help="comma-separated thread counts (default: 1 and torch's default)")
    parser.add_argument("--only", help="comma-separated model names (nothing is written)")
    parser.add_argument("--calibration", type=Path, help="reuse this calibration overlay (one thread count)")
    parser.add_argument("--wait-quiet", type=float, default=0.0, help="wait up to this many minutes for load < 1")
    parser.add_argument("--no-write", action="store_true", help="print only: no CSV, bands or README")
    parser.add_argument(
        "--processes", type=int, default=PROCESSES, help=f"fresh processes timed per row (default {PROCESSES})"
    )
    parser.add_argument(
        "--measure", nargs=3, metavar=("MODEL_FILE", "BATCH", "THREADS"), help="internal: time one model, print JSON"
    )
    args = parser.parse_args()
    if args.measure:
        model_file, batch, threads = args.measure
        print(json.dumps(measure_here(Path(model_file), int(batch), int(threads))))
        return
    import torch

    from advisor.io import dump_yaml, write_atomic, write_csv

    default = torch.get_num_threads()
    counts = [int(t) for t in args.threads.split(",")] if args.threads else sorted({1, default})
    only = set(args.only.split(",")) if args.only else None
    cases = [c for c in CASES if not only or c[1] in only]
    if args.wait_quiet:
        wait_quiet(args.wait_quiet)
    estimator, started = estimator_id(), dt.datetime.now().isoformat(timespec="minutes")
    start = time.perf_counter()
    RESULTS.mkdir(parents=True, exist_ok=True)
    # a run that writes nothing puts its calibrations and datasheet entry in a scratch folder
    out = RESULTS if not (args.no_write or only) else Path(tempfile.mkdtemp(prefix="advisor-accuracy-"))
    profiles: dict = {}
    all_rows, metas = [], []
    for i, n in enumerate(counts):
        if i and args.wait_quiet:  # the last count's rows still in the 1-minute load: the calibration would see them
            wait_quiet(min(args.wait_quiet, 3))
        rows, meta = run_threads(n, cases, profiles, args.calibration, args.processes, out)
        all_rows += rows
        metas.append(meta)
    from advisor.profiler.device import cpu_name

    if estimator_id() != estimator:  # its rows were estimated by two versions: they pool with no other run
        print("advisor/ or the catalog changed during the run: its rows are recorded apart", file=sys.stderr)
        estimator = f"{estimator}-changed-{started}"
    writing = not (args.no_write or only)
    history = read_history(HISTORY) if writing else []
    record = history_rows(all_rows, started, estimator, cpu_name())
    pool = pooled(parsed([*history, *record]), estimator, cpu_name())
    info = {
        "date": dt.date.today().isoformat(),
        "wall_s": time.perf_counter() - start,
        "processes": args.processes,
        "pooled": pool,
    }
    text = markdown(all_rows, metas, info)
    print(text)
    if not writing:
        return
    write_csv(RESULTS / "accuracy-cpu.csv", [{k: shown(v) for k, v in r.items()} for r in all_rows], "accuracy rows")
    write_csv(HISTORY, [*history, *record], "accuracy history")
    header = "# Generated by benchmarks/accuracy.py from its report-set rows on this project's CPU: do not edit.\n"
    write_atomic(BANDS, header + dump_yaml(bands(pool, runs_of(pool))), "error bands")
    write_readme(text)


if __name__ == "__main__":
    main()
