"""benchmarks/data/published_gpu.yaml, the cited published GPU training measurements: every row is complete, names
a model file and catalog hardware that exist, and the tuning/report split keeps each family in one set and gives
the report set the breadth the accuracy target asks for (issue 10)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from advisor import api
from advisor.io import read_yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "published_gpu.yaml"
KEYS = {"id", "model", "family", "set", "hardware", "count", "precision", "micro_batch", "global_batch", "measured"}
KEYS |= {"unit", "optimizer", "stack", "source", "where", "accessed"}
CNN_FAMILIES = {"resnet", "resnext", "efficientnet", "mobilenet", "ssd"}


@pytest.fixture(scope="module")
def rows():
    return read_yaml(DATA)["rows"]


@pytest.fixture(scope="module")
def catalog():
    return api.catalog()


def gpu_of(row, catalog) -> str:
    return row["hardware"] if row["count"] == 1 else catalog.instances[row["hardware"]].device


def test_rows_are_complete_and_unique(rows):
    assert len(rows) >= 45
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert KEYS <= set(r) <= KEYS | {"notes", "loader_workers"}, r["id"]
        assert r["id"] == r["id"].lower(), r["id"]
        assert r["set"] in ("tuning", "report"), r["id"]
        assert r["precision"] in ("fp32", "tf32", "fp16-mixed", "bf16-mixed"), r["id"]
        assert r["unit"] in ("samples/s", "tokens/s"), r["id"]
        assert r["measured"] > 0 and r["micro_batch"] >= 1, r["id"]
        # the global batch is micro-batch x devices x accumulation steps (a whole number of them)
        assert r["global_batch"] % (r["micro_batch"] * r["count"]) == 0, r["id"]
        # sources are pinned to a commit, so the cited cell cannot move
        assert re.match(r"https://github\.com/[^/]+/[^/]+/blob/[0-9a-f]{40}/", r["source"]), r["id"]


def test_models_and_hardware_exist(rows, catalog):
    for r in rows:
        stem = r["model"]
        assert (ROOT / "profiles" / "models" / f"{stem}.py").is_file() or (
            ROOT / "benchmarks" / "gpu_models" / f"{stem}.py"
        ).is_file(), r["id"]
        if r["count"] == 1:
            assert catalog.devices[r["hardware"]].kind == "gpu", r["id"]
        else:
            assert catalog.instances[r["hardware"]].device_count == r["count"], r["id"]


def test_tokens_per_second_only_for_models_that_count_tokens(rows):
    tokens = {"gnmt_wmt16", "transformer_xl_base", "transformer_xl_base_full_softmax"}
    assert {r["model"] for r in rows if r["unit"] == "tokens/s"} == tokens


def test_each_family_is_wholly_in_one_set(rows):
    sets = defaultdict(set)
    for r in rows:
        sets[r["family"]].add(r["set"])
    assert all(len(s) == 1 for s in sets.values()), dict(sets)


def test_report_set_is_broad_enough(rows, catalog):
    report = [r for r in rows if r["set"] == "report"]
    families = {r["family"] for r in report}
    # issue 10: at least 20 rows, 5 model families including CNNs, over V100, A100, H100, A10 and RTX 4090 and more
    assert len(report) >= 25
    assert len(families) >= 4 and families & CNN_FAMILIES
    gpus = {gpu_of(r, catalog) for r in report}
    assert len(gpus) >= 5
    assert {"v100-sxm2-16gb", "a100-80gb-sxm", "h100-sxm", "a10", "rtx-4090"} <= gpus
    # the tuning set covers CNNs and transformers too
    tuning_families = {r["family"] for r in rows if r["set"] == "tuning"}
    assert tuning_families & CNN_FAMILIES and "bert" in tuning_families


@pytest.fixture(scope="module")
def published():
    import importlib.util
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("published_script", ROOT / "benchmarks" / "published.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ncf_rows_count_the_batch_the_code_drops(published):
    # ML-20M: 20,000,263 ratings less 138,493 held-out ones = 19,861,770 positives, x5 with negatives = 99,308,850
    assert published.counted("ncf", "EPOCH_SAMPLES") == 99_308_850
    # batch 10,000,000 on one GPU: split gives 10 pieces, the last (9,308,850) dropped: 9 computed, 90,000,000
    # samples, and 99,308,850 counted -> 1.1034
    row = {"model": "ncf", "count": 1, "micro_batch": 10_000_000}
    assert published.dropped_batch_factor(row) == pytest.approx(99_308_850 / 90_000_000, rel=1e-12)
    # 8 workers of 131,072: each takes int(99,308,850 / 8) = 12,413,606 samples, ceil(94.7) = 95 pieces, 94
    # computed = 12,320,768 -> 1.00754
    row = {"model": "ncf", "count": 8, "micro_batch": 131_072}
    assert published.dropped_batch_factor(row) == pytest.approx(12_413_606 / 12_320_768, rel=1e-12)
    # other models count what they compute
    assert published.dropped_batch_factor({"model": "resnet50", "count": 1, "micro_batch": 256}) == 1.0


def test_gnmt_rows_count_fewer_tokens_than_the_padded_batch_computes(published):
    # benchmarks/results/gnmt-padding.txt, central case: 25.70 + 24.66 tokens counted a pair, 31 + 31 computed
    assert published.counted("gnmt_wmt16", "TOKENS_COUNTED") == pytest.approx(50.36)
    assert published.counted("transformer_xl_base", "TOKENS_COUNTED") is None


def test_a_rows_id_names_the_precision_it_ran(rows):
    """An id's precision suffix matches its precision field, whatever table the row is listed in: Lambda's fp16
    table holds four NCF cells whose logs print `amp : False` (fp32 with TF32 matmuls), kept as `lambda-ncf-*-tf32`
    rows. The ids are written by hand; a row relabelled without its id (or the reverse) fails here."""
    suffix = {"fp16": "fp16-mixed", "amp": "fp16-mixed", "tf32": "tf32", "fp32": "fp32"}
    checked = 0
    for r in rows:
        last = r["id"].rsplit("-", 1)[-1]
        if last in suffix:
            assert r["precision"] == suffix[last], r["id"]
            checked += 1
    # every Lambda row ends in its precision: 89 v1 + 25 v2
    assert checked >= 114
    ran_fp32 = sorted(r["hardware"] for r in rows if r["id"].startswith("lambda-ncf-") and r["precision"] == "tf32")
    assert ran_fp32 == ["a100-80gb-pcie", "a100-80gb-sxm", "h100-pcie", "h100-sxm"]
