"""`advisor recommend` / `compare` as a user runs them: answers, explanations, and the bad inputs of issue 5."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT, assert_user_error, run_cli
from test_recommend import write_world

ARGS = ("--steps", "1000", "--providers", "testcloud", "--precision", "bf16-mixed")


@pytest.fixture
def world(tmp_path):
    return write_world(tmp_path)


def recommend(world, *extra: str):
    overlay, prof = world
    return run_cli("recommend", str(prof), *ARGS, "--catalog", str(overlay), *extra)


def test_deadline_answer_as_json(world):
    result = recommend(world, "--deadline", "2000s", "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    # only inst-b (1,500 s, $3.75) meets 2,000 s; see test_recommend.py for the arithmetic
    assert [o["instance"] for o in data["options"]] == ["inst-b"]
    assert data["options"][0]["cost_usd"] == pytest.approx(3.75, rel=1e-3)
    assert data["rejections"]["counts"]["deadline"] == 1  # inst-a: 3,000 s
    assert data["rejections"]["counts"]["provider filter"] > 0  # the shipped catalog, filtered out


def test_table_names_the_answer(world):
    result = recommend(world, "--budget", "$3.5")
    assert result.returncode == 0, result.stderr
    assert "answer: inst-a" in result.stdout
    assert "minimizing time" in result.stdout  # a budget alone: the fastest within it


def test_nothing_qualifies_is_an_answer(world):
    result = recommend(world, "--deadline", "25m", "--budget", "3.5")
    assert result.returncode == 0, result.stderr
    assert "nothing qualifies" in result.stdout
    assert "binding: deadline" in result.stdout
    assert "fastest and cheapest" in result.stdout
    result = recommend(world, "--deadline", "25m", "--format", "yaml")
    assert "qualifying: 0" in result.stdout and "explanation:" in result.stdout


@pytest.mark.parametrize(
    ("option", "value", "fragment"),
    [
        ("--deadline", "0", "--deadline must be positive"),
        ("--deadline", "-3h", "--deadline must be positive"),
        ("--deadline", "soon", "--deadline: cannot read 'soon'"),
        ("--budget", "0", "--budget must be positive"),
        ("--budget", "-$5", "--budget"),
        ("--budget", "lots", "--budget: cannot read 'lots'"),
        ("--devices", "h1000", "unknown device 'h1000'"),
        ("--objective", "speed", "unknown --objective 'speed'"),
        ("--pricing", "cheap", "unknown --pricing 'cheap'"),
        ("--loader-workers", "0", "--loader-workers must be at least 1"),
    ],
)
def test_bad_input_is_one_line(world, option, value, fragment):
    assert_user_error(recommend(world, option, value), fragment)


def test_unknown_provider_suggests(world):
    overlay, prof = world
    result = run_cli("recommend", str(prof), "--steps", "10", "--providers", "awss", "--catalog", str(overlay))
    assert_user_error(result, "unknown provider 'awss'", "did you mean: aws")


def test_unknown_device_suggests(world):
    overlay, prof = world
    result = run_cli("recommend", str(prof), "--steps", "10", "--devices", "mi3000", "--catalog", str(overlay))
    assert_user_error(result, "unknown device 'mi3000'", "did you mean: mi300x")


def test_export_into_missing_folder_writes_nothing(world, tmp_path):
    missing = tmp_path / "no" / "recs.yaml"
    result = recommend(world, "--export", str(missing))
    assert_user_error(result, "does not exist")
    assert not missing.parent.exists()


def test_unloadable_profile(tmp_path, world):
    overlay, _ = world
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    assert_user_error(run_cli("recommend", str(bad), "--steps", "10", "--catalog", str(overlay)), "bad.yaml")
    assert_user_error(run_cli("recommend", str(tmp_path / "none.yaml"), "--steps", "10"), "not found")


def test_missing_workload(world):
    overlay, prof = world
    assert_user_error(run_cli("recommend", str(prof), "--catalog", str(overlay)), "needs a workload")


def test_compare_shows_each_kind(world):
    overlay, prof = world
    result = run_cli(
        "compare", str(prof), "--steps", "1000", "--providers", "testcloud", "--catalog", str(overlay), "-f", "json"
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    rows = {r["kind"]: r for r in data["rows"]}
    assert data["winner"] == "gpu" and data["verdict"].startswith("GPU wins on cost: inst-a")
    assert rows["gpu"]["best"]["instance"] == "inst-a"  # the cheapest: $3.00
    assert rows["gpu"]["fastest"]["instance"] == "inst-b"  # 1,500 s
    assert "best" not in rows["tpu"]  # filtered to testcloud: no TPU


def test_recommend_does_not_import_torch(world):
    overlay, prof = world
    code = (
        "import sys; from advisor.cli.common import run_app; from advisor.cli import app; "
        f"sys.argv = ['advisor', 'recommend', {str(prof)!r}, '--steps', '10', '--catalog', {str(overlay)!r}, "
        "'-f', 'json']\n"
        "try:\n    run_app(app)\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
