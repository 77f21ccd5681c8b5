"""`advisor estimate` as a user runs it: output formats, and one clear line (exit 2) for each bad input."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, assert_user_error, run_cli
from estimator_fixtures import toy_profile

from advisor.profiler.schema import save_profile


@pytest.fixture(scope="module")
def prof(tmp_path_factory):
    return str(save_profile(toy_profile(), tmp_path_factory.mktemp("p") / "toy.yaml"))


def test_json_is_the_estimate_and_the_table_shows_it(prof):
    res = run_cli("estimate", prof, "-H", "p5.48xlarge", "--tokens", "1B", "--global-batch", "8", "--format", "json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["config"]["devices_per_node"] == 8 and data["instance"] == "aws-p5.48xlarge"
    assert data["steps"] == 125000  # 1e9 tokens / (8 devices × 1 sample × 1000 tokens)
    assert set(data["phases"]) == {"forward", "backward", "optimizer"}
    assert data["memory"]["parameter_bytes"] == 4e9  # 1e9 parameters × 4 B (fp32 master weights)
    table = run_cli("estimate", prof, "-H", "p5.48xlarge", "--tokens", "1B", "--global-batch", "8")
    assert table.returncode == 0, table.stderr
    for text in ("step time", "memory per device", "MFU", "125,000 steps", "assumptions"):
        assert text in table.stdout


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["-H", "v100-sxm2-16gb"], ["cannot compute in bf16", "fp16-mixed"]),
        (["-H", "v100"], ["ambiguous", "v100-sxm2-16gb", "v100-pcie-16gb"]),
        (["-H", "t4"], ["cannot compute in bf16"]),
        (["-H", "p5.48xlarge", "--count", "9"], ["--count 9 is more than the 8 devices"]),
        (["-H", "p5.48xlarge", "--steps", "10", "--tokens", "1B"], ["contradictory workload"]),
        (["-H", "p5.48xlarge", "--epochs", "2"], ["--epochs needs --samples"]),
        (["-H", "h100x"], ["unknown device or instance", "did you mean"]),
        (["-H", "p5.48xlarge", "--global-batch", "4"], ["smaller than the 8 data-parallel replicas"]),
        (["-H", "p5.48xlarge", "--micro-batch", "4", "--global-batch", "8"], ["contradictory batch"]),
        (["-H", "h100-sxm", "--nodes", "2"], ["needs an instance"]),
        (["-H", "p5.48xlarge", "--pricing", "spot"], ["no spot price"]),
        (["-H", "p5.48xlarge", "--strategy", "zero"], ["unknown --strategy"]),
        (["-H", "p5.48xlarge", "--tokens", "lots"], ["--tokens"]),
        (["-H", "p5.48xlarge", "--loader-workers", "-1"], ["--loader-workers must be at least 1"]),
    ],
)
def test_bad_input_is_one_line(prof, args, fragments):
    assert_user_error(run_cli("estimate", prof, *args), *fragments)


def test_tokens_without_a_token_model(tmp_path):
    path = save_profile(toy_profile(tokens_per_sample=None), tmp_path / "p.yaml")
    assert_user_error(run_cli("estimate", str(path), "-H", "h100-sxm", "--tokens", "1B"), "no tokens per sample")


def test_profile_of_another_schema_version(tmp_path, prof):
    old = tmp_path / "old.yaml"
    old.write_text(open(prof).read().replace("schema_version: 1", "schema_version: 0"))
    assert_user_error(run_cli("estimate", str(old), "-H", "h100"), "schema_version 0", "version 1")


def test_a_model_file_where_a_profile_belongs_says_to_profile_it_first():
    # a new user's first try: the model file itself, not the YAML `advisor profile` writes from it
    model = str(ROOT / "tests/models/tiny_mlp.py")
    assert_user_error(
        run_cli("estimate", model, "-H", "h100"), "tiny_mlp.py: a model file, not a profile", f"advisor profile {model}"
    )


def test_estimate_plot_draws_the_roofline(prof, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "roof.png"
    res = run_cli("estimate", prof, "-H", "h100-sxm", "--steps", "10", "--plot", str(png))
    assert res.returncode == 0, res.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_estimate_plot_into_a_missing_folder_fails_first(prof, tmp_path):
    res = run_cli("estimate", prof, "-H", "h100-sxm", "--plot", str(tmp_path / "nope" / "roof.png"))
    assert_user_error(res, "--plot folder", "does not exist")
