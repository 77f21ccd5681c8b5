"""The layout flags as a user types them: `advisor estimate` with every flag of the parallel layout, `--search`,
one line and exit code 2 for each layout rule, and the layout in recommendations and the SkyPilot task. The bad
inputs run in-process (the CLI's own error handling), the rest as subprocesses."""

from __future__ import annotations

import json
import sys

import pytest
import yaml
from conftest import run_cli

from advisor.cli import app
from advisor.cli.common import run_app


def cli_error(capsys, monkeypatch, *args: str) -> str:
    """Run the CLI in-process; the one line it writes for a user error (exit code 2)."""
    monkeypatch.setattr(sys, "argv", ["advisor", *args])
    with pytest.raises(SystemExit) as exit_:
        run_app(app)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("note:")]
    assert exit_.value.code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--tp", "3"], ["tp·pp·cp = 3·1·1 = 3 must divide the 8 devices", "1, 2, 4, 8"]),
        (["--nodes", "2", "--tp", "3", "--pp", "2"], ["3·2·1 = 6 must divide the 16 devices"]),
        (["--tp", "4", "--vpp", "2"], ["--vpp 2 interleaves pipeline stages, and pp is 1"]),
        (["--tp", "8"], ["--tp 8 does not divide the 12 attention heads", "use --tp 4 or 6"]),
        (["--pp", "8"], ["--pp 8 is more than the 4 repeated blocks", "use --pp 4 or less"]),
        (["--nodes", "2", "--cp", "16"], ["--cp 16 does not divide the sequence of 1000 tokens", "use --cp 10 or 20"]),
        (["--global-batch", "100", "--micro-batch", "4"], ["not a multiple of dp × micro-batch = 8 × 4 = 32"]),
        (["--precision", "fp8-mixed", "-H", "p4d.24xlarge"], ["has no fp8 tensor units"]),
        (["--sequence-parallel"], ["sequence parallelism splits along the tensor-parallel group, and tp is 1"]),
        (["--recompute", "partial"], ["unknown --recompute 'partial'"]),
        (["--strategy", "zero3"], ["unknown --strategy 'zero3'", "zero1"]),
    ],
)
def test_each_bad_layout_is_one_line(capsys, monkeypatch, tmp_path, args, fragments):
    from estimator_fixtures import toy_profile

    from advisor.profiler.schema import Structure, save_profile

    # the toy profile with the structure of a 4-block transformer: 12 heads, sequence 1000
    structure = Structure(blocks=4, block_module="layers.*", hidden=768, heads=12, kv_heads=12, seq_len=1000,
                          attention="fused")  # fmt: skip
    path = save_profile(toy_profile(structure=structure), tmp_path / "toy.yaml")
    hardware = [] if "-H" in args else ["-H", "p5.48xlarge"]
    line = cli_error(capsys, monkeypatch, "estimate", str(path), *hardware, *args)
    for fragment in fragments:
        assert fragment in line, line


def test_estimate_takes_every_layout_flag():
    res = run_cli(
        "estimate", "llama3_70b", "-H", "p5.48xlarge", "--nodes", "8", "--tp", "8", "--pp", "2", "--vpp", "2",
        "--cp", "2", "--sequence-parallel", "--strategy", "zero1", "--recompute", "selective", "--micro-batch", "1",
        "--global-batch", "64", "--precision", "fp8-mixed", "--tokens", "1B", "--format", "json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["layout"] == {
        "tp": 8, "pp": 2, "vpp": 2, "cp": 2, "dp": 2, "sharding": "zero1", "sequence_parallel": True,
        "recompute": "selective",
    }  # fmt: skip
    assert data["config"]["strategy"] == "zero1" and data["stage_blocks"] == [40, 40]
    assert (data["micro_batch"], data["accumulation"], data["global_batch"]) == (1, 32, 64)  # 64 / (2 replicas × 1)
    assert set(data["comm_by_dim"]) == {"tp", "cp", "pp", "dp"}
    assert sum(data["parts"].values()) == pytest.approx(data["step_time_s"], rel=1e-9)
    table = run_cli(
        "estimate", "llama3_70b", "-H", "p5.48xlarge", "--nodes", "8", "--tp", "8", "--pp", "2", "--checkpointing",
        "--strategy", "zero1", "--global-batch", "64",
    )  # fmt: skip
    assert table.returncode == 0, table.stdout
    for text in ("layout TP8 PP2 DP4 zero1 SP full", "TP communication (exposed)", "pipeline bubble", "recompute",
                 "communication per step and device", "memory per device"):  # fmt: skip
        assert text in table.stdout, text


def test_search_ranks_layouts_and_shows_the_best():
    res = run_cli("estimate", "llama3_8b", "-H", "p5.48xlarge", "--search", "--global-batch", "64", "--top", "3")
    assert res.returncode == 0, res.stderr
    assert "layouts evaluated" in res.stdout and "the 3 fastest layouts that fit" in res.stdout
    assert "the best one in full" in res.stdout and "step time" in res.stdout


def test_recommendations_and_the_skypilot_task_carry_the_layout(tmp_path):
    task = tmp_path / "task.yaml"
    res = run_cli(
        "recommend", "llama3_8b", "--tokens", "10B", "--deadline", "2d", "--providers", "aws", "--devices", "h100",
        "--global-batch", "64", "--skypilot", str(task), "--format", "json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    best = json.loads(res.stdout)["options"][0]
    assert best["tp"] * best["pp"] * best["cp"] * best["dp"] == best["devices"]
    envs = yaml.safe_load(task.read_text())["envs"]
    for key, field in (("ADVISOR_TP", "tp"), ("ADVISOR_PP", "pp"), ("ADVISOR_VPP", "vpp"), ("ADVISOR_CP", "cp"),
                       ("ADVISOR_DP", "dp")):  # fmt: skip
        assert envs[key] == str(best[field])
    assert envs["ADVISOR_RECOMPUTE"] == best["recompute"]
    assert envs["ADVISOR_SEQUENCE_PARALLEL"] == ("1" if best["sequence_parallel"] else "0")
