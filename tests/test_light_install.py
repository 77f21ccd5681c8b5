"""The light install (`pip install .`, no PyTorch): catalog, estimate, recommend, compare and show work on shipped and
saved profiles; profile, calibrate and validate say in one line which extra to install. Torch is made unimportable
in a subprocess (as when it is not installed: `import torch` fails and importlib finds no spec)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT, assert_user_error

NO_TORCH = (
    "import sys\nsys.modules['torch'] = None\nfrom advisor.cli import main\nsys.argv = ['advisor', *sys.argv[1:]]\n"
)
NO_TORCH += "try:\n    main()\nfinally:\n    assert 'torch' not in sys.modules or sys.modules['torch'] is None\n"


def light(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", NO_TORCH, *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )  # fmt: skip


def test_the_light_commands_answer_without_torch(tmp_path):
    r = light("catalog", "show", "h100-sxm", "-f", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["id"] == "h100-sxm", r.stderr
    r = light("estimate", "gpt2_124m", "-H", "h100-sxm", "--steps", "1000", "-f", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["steps"] == 1000, r.stderr
    recs = tmp_path / "recs.yaml"
    r = light("recommend", "gpt2_124m", "--tokens", "10B", "--deadline", "3d", "--export", str(recs), "-f", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["qualifying"] > 0, r.stderr
    r = light("show", str(recs), "-f", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["question"]["profile"] == "gpt2_124m", r.stderr
    r = light("compare", "resnet50", "--samples", "1.28M", "--epochs", "90", "--providers", "lambda", "-f", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["winner"] == "gpu", r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("profile", "tests/models/tiny_mlp.py", "--device", "meta"),
        ("profile", "hf:gpt2"),
        ("calibrate", "--quick"),
        ("validate", "tests/models/tiny_mlp.py"),
    ],
)
def test_torch_commands_name_the_extra(args, tmp_path):
    r = light(*args)
    assert_user_error(r, f"advisor {args[0]} needs PyTorch, which is not installed", 'pip install "advisor[torch]"')
    assert "--index-url https://download.pytorch.org/whl/cpu" in r.stderr  # the CPU-only route


def test_light_dependencies_leave_torch_out():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [d.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip() for d in project["dependencies"]]
    assert not {"torch", "nvidia-ml-py", "transformers", "timm", "torchvision", "matplotlib"} & set(names), names
    extras = project["optional-dependencies"]
    assert any(d.startswith("torch>=") for d in extras["torch"])
    for extra in ("hf", "timm", "torchvision"):  # each model source brings torch along
        assert "advisor[torch]" in extras[extra]
