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
    tokens = {"gnmt", "transformer_xl_base", "transformer_xl_base_full_softmax"}
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
