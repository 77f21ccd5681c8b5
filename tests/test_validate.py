"""`advisor validate`: measured vs predicted per phase, and its bad inputs."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, assert_user_error, run_cli
from test_calibrate import write_user_overlay

from advisor.calibration.validate import rows


def test_rows_errors_by_phase_and_total():
    out = rows(
        {"forward": 0.1, "backward": 0.2, "optimizer": 0.1}, {"forward": 0.11, "backward": 0.18, "optimizer": 0.1}
    )
    assert [r.phase for r in out] == ["forward", "backward", "optimizer", "total"]
    assert out[0].error == pytest.approx(0.1)  # (0.11 - 0.1) / 0.1
    assert out[1].error == pytest.approx(-0.1)  # (0.18 - 0.2) / 0.2
    assert out[3].measured_s == pytest.approx(0.4) and out[3].predicted_s == pytest.approx(0.39)
    assert out[3].error == pytest.approx(-0.025)  # (0.39 - 0.4) / 0.4


def test_without_calibration_says_to_calibrate(tmp_path):
    result = run_cli("validate", "tests/models/tiny_mlp.py", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert_user_error(result, "no calibration", "advisor calibrate")


def test_bad_model_files(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    write_user_overlay(tmp_path)
    assert_user_error(run_cli("validate", str(tmp_path / "missing.py"), env=env), "missing.py does not exist")
    broken = tmp_path / "broken.py"
    broken.write_text("def build_model(:\n")
    assert_user_error(run_cli("validate", str(broken), env=env), "broken.py")
    assert_user_error(run_cli("validate", "tests/models/tiny_mlp.py", "--precision", "fp8", env=env), "fp8")


def test_validate_prints_measured_predicted_and_error(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    write_user_overlay(tmp_path)
    result = run_cli(
        "validate",
        str(ROOT / "tests/models/tiny_mlp.py"),
        "--batch-size",
        "4",
        "--repeats",
        "2",
        "--threads",
        "1",
        "--format",
        "json",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["device"] == "local-cpu" and out["batch_size"] == 4 and out["threads"] == 1
    total = out["rows"][3]
    assert total["phase"] == "total"
    assert total["measured_s"] > 0 and total["predicted_s"] > 0
    assert total["error"] == pytest.approx((total["predicted_s"] - total["measured_s"]) / total["measured_s"])
