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

# SkyPilot's task schema, read from skypilot 0.14.1 (sky/utils/schemas.py: get_task_schema and
# get_resources_schema; the package is not a test dependency: it takes 1.5 minutes and 460 MB to install and
# its Task.from_yaml fetches cloud price catalogs from the network): the keys a task and its resources may have
# (additionalProperties: False), num_nodes an integer, run/setup strings, env names matching the pattern
# below with string values, accelerators '<name>:<count>'; the clouds of its registry (sky/utils/registry.py).
TASK_KEYS = {
    "name", "workdir", "event_callback", "num_nodes", "resources", "file_mounts", "service", "setup", "run",
    "envs", "secrets", "inputs", "outputs", "file_mounts_mapping", "config", "volumes", "volume_mounts",
    "api_server_access", "managed_secrets", "pool",
}  # fmt: skip
RESOURCE_KEYS = {
    "cloud", "region", "zone", "infra", "cpus", "memory", "accelerators", "instance_type", "use_spot",
    "job_recovery", "disk_size", "disk_tier", "ports", "accelerator_args", "image_id", "labels", "any_of", "ordered",
    "autostop", "ephemeral_storage", "local_disk", "max_hourly_cost", "network_tier", "priority", "priority_class",
    "volumes",
}  # fmt: skip
CLOUDS = {
    "aws", "azure", "cudo", "do", "fluidstack", "gcp", "hyperbolic", "ibm", "kubernetes", "lambda", "nebius", "oci",
    "paperspace", "runpod", "scp", "vast", "vsphere",
}  # fmt: skip
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
    assert not ("cloud" in resources and "infra" in resources)
    assert task.get("workdir") == "."  # the project reaches the nodes
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
    # the hand-made test cloud is not one SkyPilot can launch: a note says so and no task is written
    assert "SkyPilot cannot launch testcloud instances" in result.stderr and not task.exists()
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
    assert onprem["resources"]["infra"] == "ssh"  # SkyPilot's SSH node pools


# One recommended winner of each device family on the shipped catalog: (profile, --devices term, what its task
# must contain).
FAMILIES = {
    "cuda": ("gpt2_124m", "h100", ["pip install torch\n", "torchrun"]),
    "rocm": ("gpt2_124m", "mi300x", ["torchrun"]),
    "xla": ("gpt2_124m", "tpu", ["torch_xla[tpu]", "PJRT_DEVICE=TPU"]),
    "neuron": ("gpt2_124m", "trainium,trainium2", ["torch-neuronx", "pip.repos.neuron.amazonaws.com", "torchrun"]),
    "cpu": ("lstm", "cpu", ["whl/cpu", "--nproc_per_node=1"]),
}


def _winner(profile: str, devices: str):
    from advisor import api
    from advisor.recommender.candidates import resolve_devices

    cat = load_catalog(use_env=False)
    ids = resolve_devices(cat, devices.split(","))
    rec = api.recommend(api.profile_from(profile), steps=200, constraints=Constraints(devices=ids), top=1, cat=cat)
    return rec.options[0], cat.devices[rec.options[0].device]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_winner_of_each_device_family_gets_a_launchable_task(family):
    profile, devices, needed = FAMILIES[family]
    option, device = _winner(profile, devices)
    assert device.stack == family
    task = task_for(option, profile, device)
    check_task_schema(task)
    text = task["setup"] + task["run"]
    for fragment in needed:
        assert fragment in text, (family, fragment, text)
    if family == "rocm":
        assert task["resources"]["image_id"] == "docker:rocm/pytorch:latest"  # AMD's PyTorch container
    if family == "neuron":  # one process per logical NeuronCore: 2 per Trainium, 4 per Trainium2
        assert f"--nproc_per_node={option.devices_per_node * device.workers_per_device}" in task["run"]
    if family != "xla":
        assert task["resources"]["instance_type"] == option.instance_name
    skypilot_schema(task)


def skypilot_schema(task: dict) -> None:
    """SkyPilot's own validation of the task (offline: the JSON schema its Task.from_yaml applies first),
    when the skypilot package is installed; the encoded rules above otherwise."""
    try:
        from sky.utils import common_utils, schemas
    except ImportError:
        return
    common_utils.validate_schema(task, schemas.get_task_schema(), "Invalid task YAML: ")


def test_trainium_multi_node_starts_a_process_per_neuron_core():
    option = _option(provider="aws", instance_name="trn1.32xlarge", device="trainium", device_kind="accelerator",
                     nodes=2, devices_per_node=16)  # fmt: skip
    task = task_for(option, "m", DEVICES["trainium"])
    assert "--nproc_per_node=32" in task["run"] and '--nnodes="$SKYPILOT_NUM_NODES"' in task["run"]  # 16 × 2
    assert task["resources"]["accelerators"] == "Trainium:16" and task["num_nodes"] == 2


def test_no_task_where_skypilot_cannot_launch():
    from advisor.errors import UserError

    gaudi = DEVICES["gaudi3"] if "gaudi3" in DEVICES else next(d for d in DEVICES.values() if d.stack == "habana")
    with pytest.raises(UserError) as err:
        task_for(_option(provider="aws", device=gaudi.id, device_kind="accelerator"), "m", gaudi)
    assert "SkyPilot has no Intel Gaudi" in err.value.message
    with pytest.raises(UserError) as err:
        task_for(_option(provider="alibaba", instance_name="ecs.gn8is.2xlarge"), "m", DEVICES["h100-sxm"])
    assert "SkyPilot cannot launch alibaba instances" in err.value.message


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
