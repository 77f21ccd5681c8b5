"""Fit the GPU efficiency figures of catalog/efficiency.yaml on the TUNING rows of the published dataset.

    python benchmarks/fit_gpu.py [--data FILE] [--models DIR] [--families nvidia-ampere,...]

For each NVIDIA family with tuning rows (ResNet-50 and BERT runs of benchmarks/data/published_gpu.yaml; the
report rows are never read), four figures are fitted by coordinate descent over a grid:

- memory_scale: the share of the family's sourced memory curve that eager memory-bound kernels (batch norm,
  activations, residual adds, optimizer updates) reach; the catalog keeps the scaled curve;
- gemm_scale: the same for the matrix (GEMM) curve;
- conv_scale: convolutions against a GEMM of the same FLOPs (efficiency.yaml `conv_scale`);
- host_op_s: the host's time to issue one eager op (efficiency.yaml `host_op_s`).

Rows left out of the fit (they do not measure what advisor models): compiled stacks (TorchScript, nvFuser
fusions: not eager PyTorch) and rows the dataset marks as suspect (not GPU-bound). gemm_scale is bounded so
that the top of the matrix curve stays at or below the best-shape matmul measured for the family's GPUs
(ml-engineering's MAMF table, cited in efficiency.yaml; GEMM_CEILING). A family with large-scale tuning rows
(benchmarks/data/published_large.yaml), and a family that borrows its figures, keeps gemm_scale at 1 here:
`benchmarks/large_scale.py --fit` fits its GEMM scale on both tuning sets together (`joint_families`).

The loss is the mean squared log error of the family's tuning rows plus a pull toward the sourced starting
point (the squared log of each scale), weighted as a Bayesian prior: a sourced figure is taken as known to
about +-30 % (PRIOR_SD, in log terms) and a published row as scattered about +-10 % around the truth (ROW_SD),
so the pull weighs (ROW_SD / PRIOR_SD)^2 / rows against the mean: a family with few rows stays near its
sources, one with many follows its rows. (Until 2026-12-03 the pull had a fixed weight of 0.05 whatever the
row count, 9 times this one at 20 rows: it held Hopper's conv_scale at 0.9 where its 20 rows want 0.6.)
A family with fewer than MIN_ROWS tuning rows takes the figures of its lender (BORROW); one with more fits its own,
and for a family that has a lender the pull points at the lender's conv_scale (what its rows may not show: the
Blackwell rows have no convolution). Until the same date the bar was 8 rows, and Ada and Blackwell borrowed.
The figures are printed with the errors before and after; they are copied into catalog/efficiency.yaml by hand,
each with a note naming this script and the rows (benchmarks/results/fit-gpu.txt keeps the last output).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

PRIOR_SD = 0.3  # log-scale spread of a sourced efficiency figure
ROW_SD = 0.1  # log-scale scatter of a published row around what advisor can model
MIN_ROWS = 2  # a family with fewer tuning rows borrows the figures of BORROW's family
BORROW = {"nvidia-ada": "nvidia-ampere", "nvidia-blackwell": "nvidia-hopper", "nvidia-turing": "nvidia-volta"}
GRIDS = {
    "memory_scale": [0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 1.0, 1.1],
    "gemm_scale": [0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.3],
    "conv_scale": [0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 1.0, 1.1, 1.2],
    "host_op_s": [4e-6, 6e-6, 8e-6, 10e-6, 12e-6, 15e-6, 20e-6, 25e-6],
}
# Best-shape matmul as a share of the dense peak (MAMF, stas00/ml-engineering compute/accelerator/README.md):
# A100 SXM 86.9 %, H100 SXM 80.3 %, B200 77.6 %; no entry for V100 and Ada: Ampere's figure.
GEMM_CEILING = {"nvidia-hopper": 0.803, "nvidia-blackwell": 0.776}
DEFAULT_CEILING = 0.869
LEFT_OUT = ("torchscript", "nvfuser")


def fitted(row: dict) -> bool:
    stack, notes = row.get("stack", "").lower(), str(row.get("notes", "")).lower()
    return not any(word in stack for word in LEFT_OUT) and "suspect" not in notes


def scaled(curve, factor: float):
    return [s.model_copy(update={"efficiency": min(1.0, s.efficiency * factor)}) for s in curve]


def efficiency_with(base, params: dict):
    return base.model_copy(
        update={
            "memory": scaled(base.memory, params["memory_scale"]),
            "matrix": scaled(base.matrix, params["gemm_scale"]),
            "conv_scale": params["conv_scale"],
            "host_op_s": params["host_op_s"],
        }
    )


def errors(rows, cat, family: str, params: dict) -> list[float]:
    from published import estimate_row

    eff = efficiency_with(cat.efficiency[family], params)
    cat2 = cat.model_copy(update={"efficiency": {**cat.efficiency, family: eff}})
    out = []
    for row, prof in rows:
        value = estimate_row(row, prof, cat2)[1]
        out.append(math.log(value / row["measured"]))
    return out


def loss(errs: list[float], params: dict, start: dict) -> float:
    pull = sum(math.log(params[k] / start[k]) ** 2 for k in start)
    return statistics.mean(e * e for e in errs) + (ROW_SD / PRIOR_SD) ** 2 / len(errs) * pull


def starting_point(cat, family: str) -> dict:
    """Where the pull points: the catalog's curves as they stand, convolutions as fast as GEMMs of their FLOPs
    (no source says otherwise), and for a family that could borrow, its lender's conv_scale (the closest
    measured figure for what the family's own rows may not show: Blackwell's have no convolution)."""
    eff = cat.efficiency[family]
    lender = cat.efficiency.get(BORROW.get(family, ""))
    conv = (lender.conv_scale if lender is not None else None) or 1.0
    return {"memory_scale": 1.0, "gemm_scale": 1.0, "conv_scale": conv, "host_op_s": eff.host_op_s or 12e-6}


def fit(rows, cat, family: str, fixed: set[str] = frozenset()) -> tuple[dict, list[float], list[float]]:
    start = starting_point(cat, family)
    params = dict(start)
    before = errors(rows, cat, family, params)
    best = loss(before, params, start)
    top = cat.efficiency[family].matrix[-1].efficiency
    ceiling = GEMM_CEILING.get(family, DEFAULT_CEILING) / top
    for _ in range(3):
        for name, grid in GRIDS.items():
            for value in grid if name not in fixed else ():
                if name == "gemm_scale" and value > ceiling + 1e-9:
                    continue
                trial = {**params, name: value}
                value_loss = loss(errors(rows, cat, family, trial), trial, start)
                if value_loss < best - 1e-9:
                    best, params = value_loss, trial
    return params, before, errors(rows, cat, family, params)


def summary(errs: list[float]) -> str:
    rel = [math.exp(e) - 1 for e in errs]
    return f"median |error| {statistics.median(abs(r) for r in rel):.0%}, max {max(abs(r) for r in rel):.0%}"


def tuning_rows(cat, data: Path | None = None, models: Path | None = None) -> dict[str, list]:
    """The fitted tuning rows of the published dataset with their profiles, by efficiency family."""
    import published

    from advisor import api
    from advisor.io import read_yaml

    tuning = [r for r in read_yaml(data or published.DATA)["rows"] if r["set"] == "tuning" and fitted(r)]
    profiles: dict = {}
    by_family: dict[str, list] = {}
    for row in tuning:
        prof = published.profile_for(row, models, profiles)
        device = api.resolve_hardware(cat, row["hardware"], row["count"])[0]
        by_family.setdefault(device.efficiency, []).append((row, prof))
    return by_family


def joint_families(cat, by_family: dict[str, list]) -> set[str]:
    """Families whose GEMM scale benchmarks/large_scale.py --fit fits on both tuning sets (its large-scale tuning
    rows and these), with the families that borrow their figures (fewer than MIN_ROWS rows here): this fit leaves
    their gemm_scale at 1."""
    import large_scale

    from advisor.io import read_yaml

    own = {cat.devices[r["hardware"]].efficiency for r in read_yaml(large_scale.DATA)["rows"] if r["set"] == "tuning"}
    borrowers = {f for f, lender in BORROW.items() if lender in own and len(by_family.get(f, ())) < MIN_ROWS}
    return own | borrowers


def main() -> None:
    import published

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=published.DATA)
    ap.add_argument("--models", type=Path)
    ap.add_argument("--families", help="comma-separated efficiency ids (default: every family with tuning rows)")
    args = ap.parse_args()
    from advisor import api

    cat = api.catalog()
    by_family = tuning_rows(cat, args.data, args.models)
    joint = joint_families(cat, by_family)
    wanted = set(args.families.split(",")) if args.families else set(by_family)
    for family in sorted(wanted & set(by_family)):
        rows = by_family[family]
        if len(rows) < MIN_ROWS:
            print(
                f"{family}: {len(rows)} tuning rows (< {MIN_ROWS}): takes {BORROW.get(family, 'its sources')}'s figures"
            )
            continue
        params, before, after = fit(rows, cat, family, fixed={"gemm_scale"} if family in joint else set())
        shown = ", ".join(f"{k} {v:.3g}" for k, v in params.items())
        joint_note = " (gemm_scale: large_scale.py --fit)" if family in joint else ""
        print(f"{family}: {len(rows)} tuning rows; {shown}{joint_note}")
        print(f"  before: {summary(before)}; after: {summary(after)}")


if __name__ == "__main__":
    main()
