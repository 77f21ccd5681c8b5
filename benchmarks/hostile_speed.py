"""Speed and memory on big and hostile input (issue 13): every case finishes in under 30 s and stays under
1 GB of memory, and each hostile one is refused with exit code 2.

    python benchmarks/hostile_speed.py [--keep DIR]

Inputs are generated in a temporary folder (or DIR): a 48 MB catalog overlay of 200,000 instances, a
SkyPilot vms.csv of 100,000 rows, and hostile files: a 1 KB alias bomb in an export, a 50 MB profile of
10 million aliased ops, the densest YAML the size limit lets through, the limit's worth of tiny catalog
entries, a profile of 100,001 ops, a file one byte over the limit, /dev/zero and a fifo as catalogs. Each
case runs `advisor ...` in a fresh interpreter, as a user would; the table gives its exit code, wall and CPU
seconds (CPU time is the steadier figure on a shared machine) and its peak resident memory (ru_maxrss).
Exits 1 when a case misses its exit code, 30 s of CPU or 1 GB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from advisor.io import DEFAULT_MAX_BYTES  # noqa: E402

LIMIT_S, LIMIT_BYTES = 30.0, 1e9
CHILD = """
import resource, sys
sys.argv = ["advisor", *sys.argv[1:]]
from advisor.cli import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
usage = resource.getrusage(resource.RUSAGE_SELF)
sys.stderr.write(f"\\nBENCH {code} {usage.ru_utime + usage.ru_stime:.3f} {usage.ru_maxrss}\\n")
"""


def overlay_48mb(path: Path, entries: int = 200_000) -> None:
    """Valid instance entries of about 240 bytes each, all on a shipped device."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("instances:\n")
        for i in range(entries):
            f.write(
                f"- id: bench-{i:06d}\n  provider: bench\n  name: b{i}.x8\n  device: h100-sxm\n  device_count: 8\n"
                f"  pricing: {{on_demand_usd_per_hour: {10 + i % 97 * 0.25}, regions: [r{i % 7}]}}\n"
                f"  source: synthetic row {i} for the speed benchmark, issue 13\n  as_of: 2026-11-{1 + i % 28:02d}\n"
            )


def skypilot_csv(path: Path, rows: int = 100_000) -> None:
    """Rows over 5,000 instance types, 20 regions and 10 accelerator names (one unknown, one CPU-only)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    accelerators = [("H100", 8), ("A100", 8), ("A100-80GB", 4), ("L4", 1), ("A10G", 1), ("V100", 8), ("T4", 4)]
    accelerators += [("H200", 8), ("MadeUp9000", 2), ("", 0)]
    with open(path, "w", encoding="utf-8") as f:
        f.write("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n")
        for i in range(rows):
            name, count = accelerators[i % len(accelerators)]
            price = round(1 + (i % 5000) * 0.01 + (i * 7919 % 1000) / 1000, 4)
            spot = round(price * 0.4, 4) if i % 3 else ""
            f.write(
                f"b{i % 5000}.{name.lower() or 'cpu'}x{count},{name},{count or ''},{count * 12 or 4}.0,"
                f"{count * 100 or 16}.0,{price},region-{i % 20},,{spot}\n"
            )


def alias_bomb_export(path: Path) -> None:
    """A real export with 1 KB of aliases (9**9 = 387 million values) under the free-form question."""
    subprocess.run(
        [sys.executable, "-m", "advisor", "recommend", "gpt2_124m", "--steps", "1000", "--devices", "h100",
         "--max-devices", "8", "--export", str(path)],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    bomb = "  base: &l0 [x, x, x, x, x, x, x, x, x]\n"
    bomb += "".join(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))
    path.write_text(path.read_text().replace("question:\n", "question:\n" + bomb, 1))


def aliased_profile(path: Path, ops: int = 10_000_000) -> None:
    """The issue's 50 MB profile: one op record, then ten million aliases of it."""
    head = (ROOT / "profiles" / "gpt2_124m.yaml").read_text().split("ops:\n")[0]
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + "ops:\n- &op {op: aten.mm, phase: forward, category: matrix, dtype: fp32, module: x, count: 1, ")
        f.write("flops: {fixed: 1, per_sample: 1}, bytes_read: {fixed: 1, per_sample: 1}, ")
        f.write("bytes_written: {fixed: 1, per_sample: 1}}\n")
        f.write("- *op\n" * ops)


def many_ops_profile(path: Path, ops: int = 100_001) -> None:
    head = (ROOT / "profiles" / "gpt2_124m.yaml").read_text().split("ops:\n")[0]
    record = (
        "- {op: aten.mm, phase: forward, category: matrix, dtype: fp32, module: x, count: 1, flops: {fixed: 1, "
        "per_sample: 1}, bytes_read: {fixed: 1, per_sample: 1}, bytes_written: {fixed: 1, per_sample: 1}}\n"
    )
    path.write_text(head + "ops:\n" + record * ops)


def densest_yaml(path: Path) -> None:
    """Empty lists, the most values per byte of text, up to just under the size limit."""
    line = "- []\n"
    path.write_text("instances:\n" + line * ((DEFAULT_MAX_BYTES - 20) // len(line)))


def tiny_entries(path: Path) -> None:
    """The size limit's worth of the smallest entries that pass the first checks: {id: ...} each."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("instances:\n")
        size, i = 11, 0
        while size < DEFAULT_MAX_BYTES - 40:
            line = f"- {{id: e{i}}}\n"
            f.write(line)
            size, i = size + len(line), i + 1


def over_limit(path: Path) -> None:
    with open(path, "wb") as f:
        f.truncate(DEFAULT_MAX_BYTES + 1)


def run(args: list[str], timeout: float = 120.0) -> tuple[int | None, float, float, float]:
    """(exit code, wall s, CPU s, peak RSS bytes) of `advisor ARGS` in a fresh interpreter."""
    env = {**os.environ, "ADVISOR_CATALOG": ""}
    env.pop("ADVISOR_MAX_FILE_SIZE", None)
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, *args], cwd=ROOT, env=env, timeout=timeout,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start, float("nan"), float("nan")
    wall = time.perf_counter() - start
    line = [x for x in proc.stderr.splitlines() if x.startswith("BENCH ")][-1].split()
    return int(line[1]), wall, float(line[2]), int(line[3]) * 1024.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="generate the inputs here and keep them")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="advisor-hostile-"))
    folder.mkdir(parents=True, exist_ok=True)
    f = {name: folder / name for name in ("overlay.yaml", "rec.yaml", "aliased.yaml", "ops.yaml", "dense.yaml",
                                          "tiny.yaml", "over.yaml", "fifo.yaml")}  # fmt: skip
    csv = folder / "skypilot" / "bench" / "vms.csv"
    print(f"generating inputs in {folder} ...", flush=True)
    overlay_48mb(f["overlay.yaml"])
    skypilot_csv(csv)
    alias_bomb_export(f["rec.yaml"])
    aliased_profile(f["aliased.yaml"])
    many_ops_profile(f["ops.yaml"])
    densest_yaml(f["dense.yaml"])
    tiny_entries(f["tiny.yaml"])
    over_limit(f["over.yaml"])
    if not f["fifo.yaml"].exists():
        os.mkfifo(f["fifo.yaml"])
    mb = {k: v.stat().st_size / 1e6 for k, v in f.items() if v.is_file()}
    cases = [
        (f"catalog validate: {mb['overlay.yaml']:.0f} MB overlay, 200,000 instances", 0,
         ["catalog", "validate", f["overlay.yaml"]]),
        (f"catalog import-skypilot: 100,000-row vms.csv ({csv.stat().st_size / 1e6:.0f} MB)", 0,
         ["catalog", "import-skypilot", csv.parent.parent, "-o", folder / "imported.yaml"]),
        ("show -f json: export with a 1 KB alias bomb", 2, ["show", f["rec.yaml"], "-f", "json"]),
        (f"estimate: {mb['aliased.yaml']:.0f} MB profile of 10^7 aliased ops", 2,
         ["estimate", f["aliased.yaml"], "-H", "h100-sxm", "--steps", "10"]),
        ("estimate: profile of 100,001 ops", 2, ["estimate", f["ops.yaml"], "-H", "h100-sxm", "--steps", "10"]),
        (f"catalog validate: {mb['dense.yaml']:.0f} MB of empty lists", 2, ["catalog", "validate", f["dense.yaml"]]),
        (f"catalog validate: {mb['tiny.yaml']:.0f} MB of {{id: ...}} entries", 2,
         ["catalog", "validate", f["tiny.yaml"]]),
        ("catalog validate: one byte over the size limit", 2, ["catalog", "validate", f["over.yaml"]]),
        ("catalog list --catalog /dev/zero", 2, ["catalog", "list", "--catalog", "/dev/zero"]),
        ("catalog list --catalog FIFO (no writer)", 2, ["catalog", "list", "--catalog", f["fifo.yaml"]]),
    ]  # fmt: skip
    print(f"{'case':<58} {'exit':>4} {'wall s':>7} {'CPU s':>6} {'peak MB':>8}")
    failed = 0
    for label, want, argv in cases:
        code, wall, cpu, rss = run([str(a) for a in argv])
        ok = code == want and cpu < LIMIT_S and rss < LIMIT_BYTES
        failed += not ok
        print(f"{label:<58} {code!s:>4} {wall:7.1f} {cpu:6.1f} {rss / 1e6:8.0f}{'' if ok else '  <- MISSED'}")
    print(f"targets: exit code as listed, CPU < {LIMIT_S:g} s, peak memory < {LIMIT_BYTES / 1e9:g} GB: "
          f"{'all met' if not failed else f'{failed} missed'}")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
