"""A SkyPilot task (https://docs.skypilot.co/en/latest/reference/yaml-spec.html) for one recommended option.

Only keys SkyPilot's task schema knows are written (sky/utils/schemas.py: top level name, num_nodes,
resources, setup, run, envs; resources: cloud, region, accelerators, instance_type, use_spot), and env
values are strings. Training starts with torchrun: one process per device, and across nodes the rank and
the head node's address come from SkyPilot's SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS and SKYPILOT_NUM_NODES.
TPU slices run one host program under PJRT instead (torch_xla), and grow by slice size, not by nodes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from advisor import units
from advisor.catalog.schema import Device
from advisor.io import write_atomic

# advisor provider id -> SkyPilot cloud name (on-prem machines have none: SkyPilot reaches them through
# Kubernetes or SSH node pools, which the user configures).

if TYPE_CHECKING:
    from advisor.profiler.schema import Profile

CLOUDS = {"aws": "aws", "gcp": "gcp", "azure": "azure", "lambda": "lambda", "oci": "oci"}
PORT = 29500


def _tpu_slice(option, device: Device) -> str | None:
    """'tpu-v5p-16' for two v5p-8 slices: SkyPilot's name of the generation, and the instance name's size
    (cores or chips, as Google counts them for that generation) times the nodes."""
    match = re.match(r"^(?:tpu-)?(v\d+[a-z]*)-(\d+)$", option.instance_name)
    if option.device_kind != "tpu" or not match or not device.skypilot_accelerator:
        return None
    return f"{device.skypilot_accelerator}-{int(match.group(2)) * option.nodes}"


def run_script(option) -> str:
    if option.device_kind == "tpu":
        return 'set -e\nPJRT_DEVICE=TPU python "$TRAIN_SCRIPT"\n'
    per_node = option.devices_per_node
    if option.nodes == 1:
        return f'set -e\ntorchrun --standalone --nnodes=1 --nproc_per_node={per_node} "$TRAIN_SCRIPT"\n'
    return (
        "set -e\n"
        'MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)\n'
        f'torchrun --nnodes="$SKYPILOT_NUM_NODES" --nproc_per_node={per_node} '
        f'--node_rank="$SKYPILOT_NODE_RANK" --master_addr="$MASTER_ADDR" --master_port={PORT} "$TRAIN_SCRIPT"\n'
    )


def task_for(option, profile_name: str, device: Device) -> dict:
    """The task as a dict, in the order SkyPilot's docs list the keys. `device` is the option's catalog
    device: SkyPilot's name for it is catalog data (`skypilot_accelerator`)."""
    resources: dict = {}
    cloud = CLOUDS.get(option.provider)
    if cloud:
        resources["cloud"] = cloud
        resources["region"] = option.region
    tpu = _tpu_slice(option, device)
    if tpu:
        resources["accelerators"] = tpu
    elif option.device_kind != "cpu" and device.skypilot_accelerator:
        resources["accelerators"] = f"{device.skypilot_accelerator}:{option.devices_per_node}"
    if cloud and not tpu:
        resources["instance_type"] = option.instance_name
    resources["use_spot"] = option.pricing == "spot"
    envs = {
        "TRAIN_SCRIPT": "train.py",
        "ADVISOR_PRECISION": option.precision,
        "ADVISOR_STRATEGY": option.strategy,
        "ADVISOR_ACTIVATION_CHECKPOINTING": "1" if option.checkpointing else "0",
        "ADVISOR_TP": str(option.tp),
        "ADVISOR_PP": str(option.pp),
        "ADVISOR_VPP": str(option.vpp),
        "ADVISOR_CP": str(option.cp),
        "ADVISOR_DP": str(option.dp),
        "ADVISOR_SEQUENCE_PARALLEL": "1" if option.sequence_parallel else "0",
        "ADVISOR_RECOMPUTE": option.recompute,
        "ADVISOR_MICRO_BATCH": str(option.micro_batch),
        "ADVISOR_GRAD_ACCUMULATION": str(option.accumulation),
        "ADVISOR_GLOBAL_BATCH": str(option.global_batch),
        "ADVISOR_ESTIMATED_TIME": units.fmt_duration(option.total_time_s),
        "ADVISOR_ESTIMATED_COST": units.fmt_money(option.cost_usd),
    }
    name = re.sub(r"[^a-z0-9-]+", "-", f"{profile_name}-train".lower()).strip("-")
    task = {
        "name": name,
        "num_nodes": 1 if tpu else option.nodes,
        "resources": resources,
        "envs": envs,
        "setup": "set -e\npip install torch\n",
        "run": run_script(option),
    }
    return task


class _TaskDumper(yaml.SafeDumper):
    """Multi-line strings (setup, run) as literal blocks, as people write SkyPilot tasks."""


def _str(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_TaskDumper.add_representer(str, _str)


def dump_task(task: dict) -> str:
    return yaml.dump(task, Dumper=_TaskDumper, sort_keys=False, allow_unicode=True, width=110)


def task_yaml(option, profile_name: str, device: Device) -> str:
    header = (
        f"# SkyPilot task written by advisor for {profile_name}: {option.label()}\n"
        f"# estimated {units.fmt_duration(option.total_time_s)}, {units.fmt_money(option.cost_usd)}. "
        "Set TRAIN_SCRIPT to your training script (it reads the ADVISOR_* settings or ignores them).\n"
    )
    if option.provider not in CLOUDS:
        header += "# On-prem: no cloud; point SkyPilot at the machines (SSH node pool or Kubernetes) to launch.\n"
    return header + dump_task(task_for(option, profile_name, device))


def write_task(option, profile: Profile, device: Device, path: Path) -> Path:
    return write_atomic(Path(path), task_yaml(option, profile.name, device), "--skypilot")
