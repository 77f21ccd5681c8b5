"""A SkyPilot task (https://docs.skypilot.co/en/latest/reference/yaml-spec.html) for one recommended option.

Only keys SkyPilot's task schema knows are written (sky/utils/schemas.py: top level name, workdir, num_nodes,
resources, envs, setup, run; resources: cloud or infra, region, accelerators, instance_type, image_id,
use_spot), and env values are strings. `workdir: .` syncs the folder `sky launch` runs in (the training
script with it) to every node.

Per software stack (the catalog's `software_stack` of the device):
- cuda: PyTorch from PyPI (its Linux wheels are the CUDA builds); torchrun, one process per GPU, across nodes
  with SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS and SKYPILOT_NUM_NODES;
- rocm: AMD's ROCm PyTorch container (`image_id: docker:rocm/pytorch:latest`, AMD's tested image) and the
  same torchrun (RCCL stands in for NCCL);
- xla (TPU): PyTorch with torch_xla[tpu]; one program per TPU VM host under PJRT (SkyPilot runs `run` on every
  host of the slice), and slices grow by their size, not by nodes;
- neuron (Trainium): torch-neuronx and the Neuron compiler from AWS's Neuron pip repository (SkyPilot picks
  its Neuron image for Trainium, which carries the driver); torchrun with one process per logical NeuronCore
  (the catalog's `workers_per_device`);
- cpu: PyTorch's CPU wheels; torchrun, one process per node (gloo);
- habana (Gaudi) and cann (Ascend): SkyPilot has no such accelerators, so no task is written (one line says so).

Providers SkyPilot launches as clouds get `cloud`, `region` and `instance_type`; on-prem machines are reached
through SkyPilot's SSH node pools (`infra: ssh`) and CoreWeave through Kubernetes (`infra: k8s`); a provider
SkyPilot cannot reach gets no task, with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from advisor import units
from advisor.catalog.schema import Device
from advisor.errors import UserError
from advisor.io import write_atomic

if TYPE_CHECKING:
    from advisor.profiler.schema import Profile

# advisor provider id -> SkyPilot cloud name, or the infra SkyPilot reaches the machines through.
CLOUDS = {"aws": "aws", "gcp": "gcp", "azure": "azure", "lambda": "lambda", "oci": "oci", "runpod": "runpod"}
INFRA = {"onprem": "ssh", "coreweave": "k8s"}
PORT = 29500
REQUIREMENTS = "if [ -f requirements.txt ]; then pip install -r requirements.txt; fi\n"
SETUP = {
    "cuda": "pip install torch\n",
    "rocm": "",  # the ROCm PyTorch container already holds torch
    "xla": "pip install torch 'torch_xla[tpu]' -f https://storage.googleapis.com/libtpu-releases/index.html\n",
    "neuron": "pip install torch-neuronx neuronx-cc --extra-index-url https://pip.repos.neuron.amazonaws.com\n",
    "cpu": "pip install torch --index-url https://download.pytorch.org/whl/cpu\n",
}
IMAGES = {"rocm": "docker:rocm/pytorch:latest"}
UNLAUNCHABLE = {
    "habana": "SkyPilot has no Intel Gaudi accelerators: run it with Intel's Gaudi PyTorch container instead",
    "cann": "SkyPilot has no Huawei Ascend accelerators: run it with Huawei's CANN and torch_npu instead",
}


def check_launchable(option, device: Device) -> None:
    """A UserError naming why SkyPilot cannot launch this option, if it cannot."""
    if device.stack in UNLAUNCHABLE:
        raise UserError(f"no SkyPilot task for {option.instance}: {UNLAUNCHABLE[device.stack]}")
    if option.provider not in CLOUDS and option.provider not in INFRA:
        raise UserError(
            f"no SkyPilot task for {option.instance}: SkyPilot cannot launch {option.provider} instances",
            f"launchable providers: {', '.join(sorted({*CLOUDS, *INFRA}))} (filter with --providers)",
        )


def _tpu_slice(option, device: Device) -> str | None:
    """'tpu-v5p-16' for two v5p-8 slices: SkyPilot's name of the generation, and the instance name's size
    (cores or chips, as Google counts them for that generation) times the nodes."""
    match = re.match(r"^(?:tpu-)?(v\d+[a-z]*)-(\d+)$", option.instance_name)
    if option.device_kind != "tpu" or not match or not device.skypilot_accelerator:
        return None
    return f"{device.skypilot_accelerator}-{int(match.group(2)) * option.nodes}"


def processes_per_node(option, device: Device) -> int:
    return option.devices_per_node * (device.workers_per_device or 1)


def run_script(option, device: Device) -> str:
    if device.stack == "xla":
        return 'set -e\nPJRT_DEVICE=TPU python "$TRAIN_SCRIPT"\n'
    per_node = processes_per_node(option, device)
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
    device: SkyPilot's name for it is catalog data (`skypilot_accelerator`). Raises UserError when SkyPilot
    cannot launch it."""
    check_launchable(option, device)
    resources: dict = {}
    cloud = CLOUDS.get(option.provider)
    if cloud:
        resources["cloud"] = cloud
        resources["region"] = option.region
    else:
        resources["infra"] = INFRA[option.provider]
    tpu = _tpu_slice(option, device)
    if tpu:
        resources["accelerators"] = tpu
    elif option.device_kind != "cpu" and device.skypilot_accelerator:
        resources["accelerators"] = f"{device.skypilot_accelerator}:{option.devices_per_node}"
    if cloud and not tpu:
        resources["instance_type"] = option.instance_name
    if device.stack in IMAGES:
        resources["image_id"] = IMAGES[device.stack]
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
    return {
        "name": name,
        "workdir": ".",
        "num_nodes": 1 if tpu else option.nodes,
        "resources": resources,
        "envs": envs,
        "setup": "set -e\n" + SETUP[device.stack] + REQUIREMENTS,
        "run": run_script(option, device),
    }


class _TaskDumper(yaml.SafeDumper):
    """Multi-line strings (setup, run) as literal blocks, as people write SkyPilot tasks."""


def _str(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_TaskDumper.add_representer(str, _str)


def dump_task(task: dict) -> str:
    return yaml.dump(task, Dumper=_TaskDumper, sort_keys=False, allow_unicode=True, width=110)


def task_yaml(option, profile_name: str, device: Device) -> str:
    task = task_for(option, profile_name, device)
    header = (
        f"# SkyPilot task written by advisor for {profile_name}: {option.label()}\n"
        f"# estimated {units.fmt_duration(option.total_time_s)}, {units.fmt_money(option.cost_usd)}. "
        "Run `sky launch` in your training project: workdir syncs it to every node. Set TRAIN_SCRIPT to "
        "your training script (it reads the ADVISOR_* settings or ignores them).\n"
    )
    if option.provider == "onprem":
        header += "# On-prem: declare the machines as a SkyPilot SSH node pool (~/.sky/ssh_node_pools.yaml).\n"
    elif option.provider in INFRA:
        header += f"# {option.provider}: through SkyPilot's Kubernetes support (a kubeconfig context for it).\n"
    return header + dump_task(task)


def write_task(option, profile: Profile, device: Device, path: Path) -> Path:
    return write_atomic(Path(path), task_yaml(option, profile.name, device), "--skypilot")
