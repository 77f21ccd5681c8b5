"""The accuracy benchmark's record of runs (benchmarks/accuracy.py): the estimator's id, the history file, and
error bands pooled over every recorded run of one estimator on one CPU."""

from pathlib import Path

import pytest

from advisor.io import write_csv
from tests.test_benchmark_order import load_accuracy


@pytest.fixture(scope="module")
def acc():
    return load_accuracy()


def tree(root: Path) -> None:
    for rel, text in {
        "advisor/estimator/a.py": "X = 1\n",
        "catalog/efficiency.yaml": "eff: 1\n",
        "catalog/accuracy-cpu.yaml": "accuracy: []\n",
        "benchmarks/models/m.py": "def build_model(): ...\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_estimator_id_follows_code_figures_and_models_but_not_the_bands(acc, tmp_path):
    tree(tmp_path)
    first = acc.estimator_id(tmp_path)
    assert len(first) == 12 and first == acc.estimator_id(tmp_path)
    # the bands a run writes, compiled bytecode and the results are not the estimator
    (tmp_path / "catalog/accuracy-cpu.yaml").write_text("accuracy: [x]\n")
    (tmp_path / "advisor/estimator/__pycache__").mkdir()
    (tmp_path / "advisor/estimator/__pycache__/a.cpython-311.pyc").write_bytes(b"\x00")
    (tmp_path / "benchmarks/results").mkdir()
    (tmp_path / "benchmarks/results/accuracy-cpu.csv").write_text("a\n1\n")
    assert acc.estimator_id(tmp_path) == first
    ids = {first}
    for rel in ("advisor/estimator/a.py", "catalog/efficiency.yaml", "benchmarks/models/m.py"):
        (tmp_path / rel).write_text((tmp_path / rel).read_text() + "# changed\n")
        ids.add(acc.estimator_id(tmp_path))
    assert len(ids) == 4  # each change gave a new id


def row(threads, set_, kind, error, model="cnn", batch=8):
    # measured 100 ms; calibrated and datasheet estimates off by `error` and twice it
    return {
        "threads": threads,
        "set": set_,
        "model": model,
        "kind": kind,
        "batch": batch,
        "measured_s": 0.1,
        "calibrated_s": 0.1 * (1 + error),
        "datasheet_s": 0.1 * (1 + 2 * error),
        "calibrated_error": error,
        "datasheet_error": 2 * error,
    }


def test_history_round_trip_and_bands_pool_only_runs_of_the_same_estimator_and_cpu(acc, tmp_path):
    cpu = "Test CPU"
    run_a = acc.history_rows(
        [row(1, "report", "cnn", 0.10), row(1, "report", "cnn", -0.30)], "2026-12-06T07:07", "e1", cpu
    )
    run_b = acc.history_rows(
        [row(1, "report", "cnn", 0.20), row(1, "report", "cnn", -0.20)], "2026-12-06T08:15", "e1", cpu
    )
    older = acc.history_rows([row(1, "report", "cnn", 0.90)], "2026-12-05T10:00", "e0", cpu)
    elsewhere = acc.history_rows([row(1, "report", "cnn", 0.80)], "2026-12-06T09:00", "e1", "Other CPU")
    tuning = acc.history_rows([row(1, "tuning", "cnn", 0.70, model="resnet")], "2026-12-06T08:15", "e1", cpu)
    path = tmp_path / "runs.csv"
    write_csv(path, [*older, *run_a, *run_b, *elsewhere, *tuning], "accuracy history")
    history = acc.parsed(acc.read_history(path))
    assert history[1]["calibrated_error"] == pytest.approx(0.10) and history[1]["threads"] == 1
    assert history[1]["calibrated_s"] == pytest.approx(0.11)  # written to 6 digits: 0.11
    pool = acc.pooled(history, "e1", cpu)
    assert acc.runs_of(pool) == ["2026-12-06T07:07", "2026-12-06T08:15"]
    assert len(pool) == 5  # the 4 report rows of runs a and b and b's tuning row; not e0's, not the other CPU's
    entries = {e["id"]: e for e in acc.bands(pool, acc.runs_of(pool))["accuracy"]}
    cal = entries["cpu-calibrated-any-1t"]
    # |errors| 0.10, 0.30, 0.20, 0.20: median 0.20, max 0.30; the lean is the mean of the negated errors:
    # -(0.10 - 0.30 + 0.20 - 0.20) / 4 = +0.05 (estimates faster than measured); the tuning row (0.70) is left out
    assert (cal["error_band"], cal["max_error"], cal["bias"], cal["rows"]) == (0.2, 0.3, 0.05, 4)
    assert "over 2 benchmark runs of this estimator (2026-12-06)" in cal["basis"]
    sheet = entries["cpu-datasheet-any-1t"]  # twice the errors: median 0.40, max 0.60
    assert (sheet["error_band"], sheet["max_error"]) == (0.4, 0.6)
    # a kind's band from one model's rows is held at all kinds' when that is wider: two mlp rows of one model at
    # 0.01 and 0.03 (median 0.02) beside the four cnn rows: all six |errors| 0.01 0.03 0.10 0.20 0.20 0.30, median
    # 0.15; with a second mlp model (0.01, 0.03, 0.02, 0.02: median 0.02) the kind keeps its own
    mlp = [row(1, "report", "mlp", e, model="mixer") for e in (0.01, -0.03)]
    one = acc.parsed(
        acc.history_rows([*mlp, *[r for r in pool if r["set"] == "report"]], "2026-12-06T09:00", "e1", cpu)
    )
    held = {e["id"]: e for e in acc.bands(one, None)["accuracy"]}["cpu-calibrated-mlp-1t"]
    assert held["error_band"] == 0.15 and held["basis"].startswith("held at the median |error| of all 6 report rows")
    assert "its 2 mlp rows, of one model (mixer), gave 2%" in held["basis"] and held["rows"] == 2
    two = [*mlp, row(1, "report", "mlp", 0.02, model="autoenc"), row(1, "report", "mlp", 0.02, model="autoenc")]
    rows = acc.parsed(
        acc.history_rows([*two, *[r for r in pool if r["set"] == "report"]], "2026-12-06T09:00", "e1", cpu)
    )
    own = {e["id"]: e for e in acc.bands(rows, None)["accuracy"]}["cpu-calibrated-mlp-1t"]
    assert own["error_band"] == 0.02 and own["basis"].startswith("median |error| of 4 mlp training steps")
    # one run alone: no "over ... runs" in the basis
    single = acc.bands(acc.pooled(history, "e0", cpu), ["2026-12-05T10:00"])["accuracy"][0]
    assert single["error_band"] == 0.9 and "benchmark runs" not in single["basis"]
