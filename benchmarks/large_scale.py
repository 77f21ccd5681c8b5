"""Large-scale training against what was published: every row of benchmarks/data/published_large.yaml estimated
with the row's own layout, hardware, precision and batch, and compared in the row's own unit.

    python benchmarks/large_scale.py [--set report|tuning|all] [--rows ID,ID] [--markdown] [--csv PATH]
    python benchmarks/large_scale.py --fit      # fit each family's efficiency on tuning rows only (never report rows)

Each row's model file (benchmarks/large_models/<model>.py) is profiled on meta once (batch 1 and 2, bf16-mixed or
the file's PRECISION) and cached under benchmarks/.cache/ by the sha256 of the file and of the profiler's sources,
so the first run takes about ten minutes and later runs seconds. The estimate is advisor's `estimate()` with no
per-row or per-model input beyond what the row states: the catalog's devices, instances and family efficiency
profiles, the same for every row. A row runs on its catalog instance's node (devices per node, fabric, network),
with as many nodes as its devices need, beyond the instance's `max_nodes` where the source ran a larger cluster.

Conversions to the row's unit (benchmarks/data/README_large.md, "Units and FLOP conventions"): step_time_s as is;
tokens_per_s_per_gpu = global batch × sequence / (step × devices); model_tflops_per_gpu = the source's FLOPs per
step by its own convention / (step × devices); mfu = the same / the source's peak. The FLOP conventions need the
model's shape, read from its profile (blocks, width, heads, head width, vocabulary, MLP width, parameters).

`--fit` grid-searches, for each device family (its catalog efficiency profile), the two family figures that
large-scale frameworks change and eager PyTorch profiles cannot show: `fused_elementwise` (the share of the
blocks' elementwise time left after kernel fusion) and `tp_overlap` (the share of tensor-parallel traffic hidden
behind the matmuls), minimising the mean absolute error of that family's `tuning` rows (the median breaking
ties) and nothing else. The mean, because a family has one to five tuning rows: the median of five ignores two
of them. With them it fits a third figure, the family's training-load GEMM scale (the matrix curve × 1 … 0.75:
a training step holds the GPUs at their power limit, a GEMM benchmark does not), which the small eager models of
benchmarks/published.py see as well: that one is scored on both tuning sets, the mean of this family's tuning
rows here and the mean of its published tuning rows (benchmarks/fit_gpu.py's selection), averaged with equal
weight; a family with fewer than fit_gpu.py's MIN_ROWS published rows takes its lender's GEMM scale, as it takes
its other figures. The values it prints go into
catalog/efficiency.yaml (the GEMM scale multiplies the family's matrix steps); a rerun on the updated catalog
prints x1.0 and the same two figures.

Error = estimated / published − 1 in the row's unit (for a step time, the throughput error is the opposite sign:
an estimate 10 % too slow reads +10 % here). The summary gives the median and maximum absolute error on the
report rows (the rows nothing was tuned on) and, separately, on the tuning rows.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # fit_gpu.py and published.py, which --fit reads

from advisor import api  # noqa: E402
from advisor.errors import UserError  # noqa: E402
from advisor.estimator.config import Config  # noqa: E402
from advisor.estimator.estimate import estimate  # noqa: E402
from advisor.estimator.layout import Layout  # noqa: E402
from advisor.io import read_yaml, write_csv  # noqa: E402
from advisor.profiler.schema import load_profile, save_profile  # noqa: E402
from advisor.profiler.structure import in_block, is_fused_attention, is_weight_op, shapes_of  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "published_large.yaml"
MODELS = ROOT / "benchmarks" / "large_models"
CACHE = ROOT / "benchmarks" / ".cache" / "large_profiles"
SHARDING = {"ddp": "none", "none": "none", "zero1": "zero1", "zero2": "zero2", "fsdp": "fsdp"}


def model_settings(path: Path) -> tuple[int, str]:
    sys.path.insert(0, str(ROOT / "profiles"))
    from regenerate import settings  # the same reading of BATCH_SIZE and PRECISION as the shipped profiles

    return settings(path)


def profile_for(model: str):
    """The model file's profile, from the cache when neither the file nor the helpers it builds on (_*.py) have
    changed."""
    path = MODELS / f"{model}.py"
    from profile_cache import profiler_digest  # benchmarks/ is the script's own folder, first on sys.path

    sources = b"".join(p.read_bytes() for p in [path, *sorted(MODELS.glob("_*.py"))])
    digest = hashlib.sha256(sources + profiler_digest()).hexdigest()[:16]
    cached = CACHE / f"{model}-{digest}.yaml"
    if cached.is_file():
        return load_profile(cached)
    from advisor.profiler.profile import profile_model

    batch, precision = model_settings(path)
    start = time.perf_counter()
    prof = profile_model(path, batch_size=batch, device="meta", precision=precision, optimizer="adamw", name=model)
    CACHE.mkdir(parents=True, exist_ok=True)
    save_profile(prof, cached)
    print(f"  profiled {model} in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    return prof


def shape(prof) -> dict:
    """The dimensions the FLOP conventions use, read from the profile: L, h, H, kv, d, V, f, N."""
    st = prof.structure
    d = st.hidden // st.heads
    vocab, ffn = None, 0
    for op in prof.ops:
        shapes = shapes_of(op.shapes)
        if op.phase != "forward":
            continue
        if op.op == "aten.embedding" and vocab is None and shapes:
            vocab = shapes[0][0]
        if in_block(op.module, st.block_module):
            if is_fused_attention(op.op) and shapes:
                d = shapes[0][-1]
            if op.category == "matrix" and is_weight_op(op, prof.batch_size) and shapes:
                ffn = max(ffn, [s for s in shapes if len(s) == 2][-1][-1])
    return {"L": st.blocks, "h": st.hidden, "H": st.heads, "kv": st.kv_heads, "d": d, "V": vocab, "f": ffn,
            "N": prof.parameters}  # fmt: skip


def convention_flops(row: dict, dims: dict) -> float:
    """FLOPs per step by the row's own convention (README_large.md, "Units and FLOP conventions")."""
    name = row["flops_convention"].split(":")[0].split(" (")[0].strip()
    B, s = row["global_batch"], row["seq_len"]  # noqa: N806 - the conventions' own letters
    L, h, H, kv, d, V, f, N = (dims[k] for k in ("L", "h", "H", "kv", "d", "V", "f", "N"))  # noqa: N806
    if name == "megatron-eq3":
        return 96 * B * s * L * h**2 * (1 + s / (6 * h) + V / (16 * L * h))
    if name == "megatron-model":
        return 72 * B * s * L * h**2 * (1 + s / (6 * h) + V / (12 * L * h))
    if name in ("nemo-24.07", "megatron-bridge-causal"):
        attention = 12 if name == "nemo-24.07" else 6
        return B * s * L * h**2 * (12 + 12 * kv / H + 18 * f / h + attention * s / h + 6 * V / (L * h))
    if name == "6N+attn causal":
        return B * (6 * N * s + 6 * L * H * d * s**2)
    if name == "6N+attn" or "torchtitan counts 6N + 12" in row["flops_convention"]:
        return B * (6 * N * s + 12 * L * H * d * s**2)
    raise SystemExit(f"{row['id']}: unknown FLOP convention {row['flops_convention']!r}")


def in_unit(row: dict, step_s: float, dims: dict) -> float:
    unit, n = row["unit"], row["devices"]
    if unit == "step_time_s":
        return step_s
    if unit == "tokens_per_s_per_gpu":
        return row["global_batch"] * row["seq_len"] / (step_s * n)
    tflops = convention_flops(row, dims) / (step_s * n) / 1e12
    if unit == "model_tflops_per_gpu":
        return tflops
    if unit == "mfu":
        return tflops / row["mfu_peak_tflops"]
    raise SystemExit(f"{row['id']}: unknown unit {unit!r}")


def config_for(row: dict, cat) -> Config:
    inst = cat.instances[row["instance"]] if row.get("instance") else None
    per_node = int(round(inst.device_count)) if inst else row["devices"]
    if row["devices"] % per_node:
        raise UserError(f"{row['id']}: {row['devices']} devices are not whole {inst.id} nodes of {per_node}")
    lay = row["layout"]
    layout = Layout(
        tp=lay["tp"],
        pp=lay["pp"],
        vpp=lay.get("vpp", 1),
        cp=lay.get("cp", 1),
        dp=lay["dp"],
        sharding=SHARDING[lay.get("sharding", "ddp")],
        sequence_parallel=bool(lay.get("sequence_parallel")) and lay["tp"] > 1,
        recompute=lay.get("recompute", "none"),
    )
    return Config(
        device=row["hardware"],
        instance=inst.id if inst else None,
        devices_per_node=per_node,
        nodes=row["devices"] // per_node,
        precision=row["precision"],
        layout=layout,
        micro_batch=row["micro_batch"],
        global_batch=row["global_batch"],
        kernels=row.get("kernels", "fused"),  # README_large.md: fused frameworks unless the row says eager
    )


def run(rows: list[dict], cat=None) -> list[dict]:
    cat = cat or api.catalog()
    results = []
    for row in rows:
        prof = profile_for(row["model"])
        st = prof.structure
        if st.seq_len != row["seq_len"]:
            raise SystemExit(f"{row['id']}: the model file's sequence {st.seq_len} is not the row's {row['seq_len']}")
        est = estimate(prof, cat, config_for(row, cat))
        value = in_unit(row, est.step_time_s, shape(prof))
        results.append(
            {
                "id": row["id"],
                "set": row["set"],
                "model": row["model"],
                "hardware": row["hardware"],
                "devices": row["devices"],
                "precision": row["precision"],
                "layout": est.layout.label(),
                "unit": row["unit"],
                "published": row["measured"],
                "estimated": value,
                "error": value / row["measured"] - 1,
                "mfu": est.mfu,
                "fits": est.memory.fits,
                "source": row["source"],
            }
        )
    return results


UNITS = {"step_time_s": "s/step", "tokens_per_s_per_gpu": "tok/s/GPU", "model_tflops_per_gpu": "TFLOP/s/GPU",
         "mfu": "MFU"}  # fmt: skip


def fmt(value: float, unit: str) -> str:
    if unit == "mfu":
        return f"{100 * value:.1f} %"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def summary(results: list[dict], which: str) -> str:
    errors = [abs(r["error"]) for r in results if r["set"] == which]
    if not errors:
        return f"{which} rows: none"
    worst = max(results, key=lambda r: abs(r["error"]) if r["set"] == which else -1)
    within = sum(e <= 0.30 for e in errors)
    return (
        f"{which} rows: {len(errors)}, median absolute error {100 * statistics.median(errors):.1f} %, "
        f"maximum {100 * max(errors):.1f} % ({worst['id']}), {within} of {len(errors)} within 30 %"
    )


def markdown(results: list[dict]) -> str:
    lines = [
        "| row | set | model | hardware | devices | precision | layout | published | estimated | unit | error |",
        "|---|---|---|---|---:|---|---|---:|---:|---|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['id']} | {r['set']} | {r['model']} | {r['hardware']} | {r['devices']:,} | {r['precision']} | "
            f"{r['layout']} | {fmt(r['published'], r['unit'])} | {fmt(r['estimated'], r['unit'])} | "
            f"{UNITS[r['unit']]} | {100 * r['error']:+.0f} % |"
        )
    return "\n".join(lines)


FUSED = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2)
OVERLAP = (0.0, 0.25, 0.5, 0.75)  # below 1: the schema keeps some tensor-parallel traffic exposed
GEMM = (1.0, 0.95, 0.9, 0.85, 0.8, 0.75)


def published_errors(cat) -> dict[str, dict[float, list[float]]]:
    """Per family with enough published tuning rows (benchmarks/fit_gpu.py's selection), the |error| of each of
    them with the family's matrix curve scaled by each GEMM factor."""
    import fit_gpu

    by_family = fit_gpu.tuning_rows(cat)
    out = {}
    for family, rows in by_family.items():
        if len(rows) < fit_gpu.MIN_ROWS:
            continue
        base = {"memory_scale": 1.0, "conv_scale": cat.efficiency[family].conv_scale or 1.0,
                "host_op_s": cat.efficiency[family].host_op_s or 12e-6}  # fmt: skip
        out[family] = {
            k: [abs(math.exp(e) - 1) for e in fit_gpu.errors(rows, cat, family, {**base, "gemm_scale": k})]
            for k in GEMM
        }
    return out


def fit(rows: list[dict]) -> None:
    """Per family: the GEMM scale, fused_elementwise and tp_overlap that minimise the mean absolute error of its
    tuning rows, the GEMM scale scored on both tuning sets, their means averaged (see the module docstring)."""
    cat = api.catalog()
    tuning = [r for r in rows if r["set"] == "tuning"]
    import fit_gpu

    published = published_errors(cat)
    lenders = {f: lender for f, lender in fit_gpu.BORROW.items() if f not in published and lender in published}
    # lenders first: a family that borrows fit_gpu.py's figures takes its lender's GEMM scale as well
    families = sorted({cat.devices[r["hardware"]].efficiency for r in tuning}, key=lambda f: (f in lenders, f))
    chosen: dict[str, float] = {}
    for family in families:
        mine = [r for r in tuning if cat.devices[r["hardware"]].efficiency == family]
        base = cat.efficiency[family]
        pooled_rows = published.get(family, {})
        grid = (chosen.get(lenders[family], 1.0),) if family in lenders else GEMM if pooled_rows else (1.0,)
        best = None
        for k in grid:
            matrix = fit_gpu.scaled(base.matrix, k)
            for fused in FUSED:
                for overlap in OVERLAP:
                    update = {"matrix": matrix, "fused_elementwise": fused, "tp_overlap": overlap}
                    eff = base.model_copy(update=update)
                    trial = cat.model_copy(update={"efficiency": {**cat.efficiency, family: eff}})
                    own = [abs(r["error"]) for r in run(mine, trial)]
                    sets = [own, pooled_rows[k]] if pooled_rows else [own]
                    key = (statistics.mean(statistics.mean(e) for e in sets), statistics.median(own))
                    if best is None or key < best[0]:
                        best = (key, k, fused, overlap, own)
        (score, _), k, fused, overlap, own = best
        chosen[family] = k
        other = (
            f"; the {len(pooled_rows[k])} published tuning rows' mean {100 * statistics.mean(pooled_rows[k]):.1f} % "
            f"(score, the two sets' means averaged: {100 * score:.1f} %)"
            if pooled_rows
            else f"; GEMM scale {lenders[family]}'s (fit_gpu.py's lender)"
            if family in lenders
            else ""
        )
        print(
            f"{family}: gemm x{k}, fused_elementwise {fused}, tp_overlap {overlap} on {len(mine)} tuning rows "
            f"({', '.join(r['id'] for r in mine)}): their mean {100 * statistics.mean(own):.1f} %, "
            f"median {100 * statistics.median(own):.1f} %{other}"
        )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("report", "tuning", "all"), default="all")
    parser.add_argument("--rows", default="", help="only these row ids, comma separated")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown (for the README)")
    parser.add_argument("--csv", type=Path, help="also write the results as CSV")
    parser.add_argument("--fit", action="store_true", help="fit each family's efficiency on its tuning rows")
    args = parser.parse_args(argv)
    rows = read_yaml(DATA)["rows"]
    if args.fit:
        fit(rows)
        return
    if args.set != "all":
        rows = [r for r in rows if r["set"] == args.set]
    if args.rows:
        wanted = set(args.rows.split(","))
        rows = [r for r in rows if r["id"] in wanted]
    start = time.perf_counter()
    results = run(rows)
    if args.markdown:
        print(markdown(results))
    else:
        for r in results:
            print(
                f"{r['id']:46s} {r['set']:6s} {r['layout']:28s} published {fmt(r['published'], r['unit']):>8s} "
                f"estimated {fmt(r['estimated'], r['unit']):>8s} {UNITS[r['unit']]:12s} {100 * r['error']:+6.1f} %"
                f"{'' if r['fits'] else '  (does not fit)'}"
            )
    print()
    for which in ("report", "tuning"):
        print(summary(results, which))
    print(f"({len(results)} rows in {time.perf_counter() - start:.1f} s)")
    if args.csv:
        write_csv(Path(args.csv), results, "large-scale rows")


if __name__ == "__main__":
    main(sys.argv[1:])
