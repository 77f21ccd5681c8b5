"""Exports: the recommendation YAML read back by `advisor show`, the SkyPilot task, the plots."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from conftest import assert_user_error, run_cli
from test_recommend import Constraints, run, tiny_catalog, tiny_profile, write_world

from advisor.catalog.load import load_catalog
from advisor.recommender.model import Recommendation
from advisor.render.export import export_data, read_export, write_export
from advisor.render.skypilot import task_for, task_yaml

# SkyPilot's task schema (sky/utils/schemas.py, get_task_schema and the resources schema): the keys a task
# and its resources may have (additionalProperties: False), num_nodes an integer, run/setup strings, env
# names matching the pattern below with string values, accelerators '<name>:<count>'.
TASK_KEYS = {
    "name", "workdir", "event_callback", "num_nodes", "resources", "file_mounts", "service", "setup", "run",
    "envs", "secrets", "inputs", "outputs", "file_mounts_mapping", "config", "volumes",
}  # fmt: skip
RESOURCE_KEYS = {
    "cloud", "region", "zone", "infra", "cpus", "memory", "accelerators", "instance_type", "use_spot",
    "job_recovery", "disk_size", "disk_tier", "ports", "accelerator_args", "image_id", "labels", "any_of", "ordered",
}  # fmt: skip
CLOUDS = {"aws", "gcp", "azure", "lambda", "oci", "kubernetes", "runpod", "fluidstack", "paperspace", "cudo", "ibm"}
DEVICES = load_catalog(use_env=False).devices  # the shipped catalog: SkyPilot names are its data
ENV_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def check_task_schema(task: dict) -> None:
    assert set(task) <= TASK_KEYS, set(task) - TASK_KEYS
    assert isinstance(task.get("num_nodes", 1), int) and task.get("num_nodes", 1) >= 1
    assert isinstance(task["run"], str) and isinstance(task.get("setup", ""), str)
    resources = task["resources"]
    assert set(resources) <= RESOURCE_KEYS, set(resources) - RESOURCE_KEYS
    if "cloud" in resources:
        assert resources["cloud"] in CLOUDS
    if "accelerators" in resources:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*(:\d+)?", resources["accelerators"])
    assert isinstance(resources.get("use_spot", False), bool)
    for key, value in task.get("envs", {}).items():
        assert ENV_NAME.match(key) and isinstance(value, str), (key, value)


def test_export_round_trip_through_show(tmp_path):
    rec = run(Constraints(deadline_s=3600))
    path = write_export(rec, tmp_path / "recs.yaml")
    data = yaml.safe_load(path.read_text())
    assert data["kind"] == "advisor-recommendation" and data["version"] == 1
    assert data["question"]["profile"] == "tiny" and data["question"]["profile_sha256"] == "ab" * 32
    assert data["question"]["workload"] == {"steps": 1000.0}
    assert data["question"]["constraints"]["deadline_s"] == 3600
    assert data["catalog_as_of"] == {"oldest": "2026-01-01", "newest": "2026-01-01"}
    assert "feasible" not in data  # plot data stays out of the file
    back = read_export(path)
    assert isinstance(back, Recommendation)
    assert back.options == rec.options
    assert back.options[0].cost_usd == pytest.approx(3.0, rel=1e-3)  # inst-a, $3.60/h × 3,000 s
    shown = run_cli("show", str(path), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["options"][0]["instance"] == "inst-a"
    table = run_cli("show", str(path))
    assert "answer: inst-a" in table.stdout


def test_show_rejects_other_files(tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text("a: 1\n")
    assert_user_error(run_cli("show", str(other)), "not an advisor recommendation export")
    assert_user_error(run_cli("show", str(tmp_path / "missing.yaml")), "no such file")


def test_cli_export_skypilot_and_plot(tmp_path):
    overlay, prof = write_world(tmp_path)
    recs, task, png = tmp_path / "recs.yaml", tmp_path / "task.yaml", tmp_path / "p.png"
    result = run_cli(
        "recommend", str(prof), "--steps", "1000", "--providers", "testcloud", "--precision", "bf16-mixed",
        "--deadline", "1h", "--catalog", str(overlay), "--export", str(recs), "--skypilot", str(task),
        "--plot", str(png),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert read_export(recs).options[0].instance == "inst-a"
    check_task_schema(yaml.safe_load(task.read_text()))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind


def _option(**update):
    base = run(Constraints()).options[0]
    return base.model_copy(update=update)


def test_skypilot_multi_node_gpu_task():
    option = _option(
        provider="aws", instance_name="p5.48xlarge", region="us-east-1", device="h100-sxm", device_kind="gpu",
        nodes=4, devices_per_node=8, devices=32, pricing="spot",
    )  # fmt: skip
    task = task_for(option, "gpt2_124m", DEVICES["h100-sxm"])
    check_task_schema(task)
    assert task["num_nodes"] == 4
    assert task["resources"] == {
        "cloud": "aws",
        "region": "us-east-1",
        "accelerators": "H100:8",
        "instance_type": "p5.48xlarge",
        "use_spot": True,
    }
    run_text = task["run"]
    assert "--nproc_per_node=8" in run_text and '--nnodes="$SKYPILOT_NUM_NODES"' in run_text
    assert '--node_rank="$SKYPILOT_NODE_RANK"' in run_text and "SKYPILOT_NODE_IPS" in run_text
    assert task["name"] == "gpt2-124m-train"
    # the YAML parses back to the same task, with run as a literal block
    text = task_yaml(option, "gpt2_124m", DEVICES["h100-sxm"])
    assert yaml.safe_load(text) == task and "run: |" in text


def test_skypilot_single_node_tpu_and_onprem():
    one = task_for(_option(provider="lambda", instance_name="gpu_1x_a100", device="a100-40gb-sxm", nodes=1,
                           devices_per_node=1), "m", DEVICES["a100-40gb-sxm"])  # fmt: skip
    assert one["resources"]["accelerators"] == "A100:1" and one["num_nodes"] == 1
    assert "--standalone" in one["run"] and "--nproc_per_node=1" in one["run"]
    # two v5p-8 slices (4 chips, 8 TensorCores each) are one tpu-v5p-16 slice
    tpu = task_for(_option(provider="gcp", instance_name="v5p-8", device="tpu-v5p", device_kind="tpu", nodes=2,
                           devices_per_node=4), "m", DEVICES["tpu-v5p"])  # fmt: skip
    check_task_schema(tpu)
    assert tpu["resources"]["accelerators"] == "tpu-v5p-16" and "instance_type" not in tpu["resources"]
    assert tpu["num_nodes"] == 1 and "PJRT_DEVICE=TPU" in tpu["run"]
    onprem = task_for(
        _option(provider="onprem", instance_name="DGX H100", device="h100-sxm", devices_per_node=8),
        "m",
        DEVICES["h100-sxm"],
    )
    check_task_schema(onprem)
    assert "cloud" not in onprem["resources"] and onprem["resources"]["accelerators"] == "H100:8"


def test_skypilot_package_accepts_the_task(tmp_path):
    sky = pytest.importorskip("sky")
    path = tmp_path / "task.yaml"
    path.write_text(task_yaml(_option(provider="aws", instance_name="p5.48xlarge", device="h100-sxm",
                                      devices_per_node=8, nodes=2), "m", DEVICES["h100-sxm"]))  # fmt: skip
    task = sky.Task.from_yaml(str(path))
    assert task.num_nodes == 2


def test_export_data_is_plain():
    rec = run(Constraints())
    data = export_data(rec)
    yaml.safe_dump(data)  # only plain types
    assert data["options"][0]["rank"] == 1


def test_plots(tmp_path):
    pytest.importorskip("matplotlib")
    from advisor.render.plots import pareto_png, roofline_png

    rec = run(Constraints(deadline_s=3600, budget_usd=4))
    assert pareto_png(rec, tmp_path / "p.png").stat().st_size > 1000
    cat = tiny_catalog()
    out = roofline_png(
        tiny_profile(), cat.devices["gpu-a"], cat.efficiency["test-eff"], "bf16-mixed", tmp_path / "r.png"
    )
    assert out.read_bytes()[:4] == b"\x89PNG"
