"""The pages a CPU training step faults in, counted in fresh processes (advisor/profiler/faults.py). Every expected
figure is derived by hand beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.profiler.faults import measure, rebuildable, summarize
from advisor.profiler.model_file import load_model_file
from advisor.profiler.profile import glibc
from advisor.profiler.schema import ModelSource
from advisor.profiler.sources import Resolved

MODELS = Path(__file__).parent / "models"


def test_the_mean_step_and_each_phases_share_of_it():
    # forward: 0 and 40,960 bytes, mean 20,480; backward 8,192 both steps; no optimizer steps counted: the mean
    # step 28,672 bytes, forward 20,480 / 28,672 = 5/7 of it, backward 2/7
    total, shares = summarize({"forward": [0, 40_960], "backward": [8_192, 8_192], "optimizer": []})
    assert total == 28_672
    assert shares == pytest.approx({"forward": 5 / 7, "backward": 2 / 7})
    assert summarize({"forward": [0, 0], "backward": [0, 0], "optimizer": [0, 0]}) == (0.0, {})


def test_only_a_model_built_from_its_file_is_counted_in_another_process():
    mf = load_model_file(MODELS / "tiny_mlp.py")
    assert rebuildable(mf)
    parts = {k: getattr(mf, k) for k in ("path", "sha256", "build_model", "example_batch", "training_step")}
    parts["make_optimizer"] = mf.make_optimizer
    shipped = Resolved(**parts, source=ModelSource(kind="shipped", id="tiny"))
    assert rebuildable(shipped)
    built_here = Resolved(**parts, source=ModelSource(kind="timm", id="resnet18"))
    assert not rebuildable(built_here)
    assert measure(built_here, [4], "fp32", None) is None  # the profiler replays it instead


@pytest.mark.skipif(not glibc(), reason="glibc's mmap ceiling")
def test_a_block_above_glibcs_ceiling_is_faulted_in_by_every_step(tmp_path):
    # the forward pass makes and frees a 64 MiB tensor (16,777,216 fp32): above glibc's 32 MiB ceiling for the
    # dynamic mmap threshold, so mapped on its own and unmapped every step; its data, 67,108,864 bytes after the
    # 16-byte chunk header, touches 16,385 pages: 67,112,960 bytes a step, in the forward pass. The rest (a 16x4
    # linear layer at batch 4) fits the heap the warm-up steps left, so the backward and optimizer fault (almost)
    # nothing
    model = tmp_path / "mapped.py"
    model.write_text(
        "import torch\n"
        "def build_model():\n"
        "    return torch.nn.Linear(16, 4)\n"
        "def example_batch(batch_size):\n"
        "    return (torch.randn(batch_size, 16),)\n"
        "def training_step(model, batch):\n"
        "    return model(batch[0]).sum() + torch.ones(1 << 24).sum() * 0\n"
    )
    [(total, shares)] = measure(load_model_file(model), [4], "fp32", None)
    assert 67_112_960 <= total <= 67_112_960 + 1_000_000
    assert shares["forward"] > 0.985


def test_a_model_that_fails_in_the_other_process_is_not_counted(tmp_path):
    model = tmp_path / "broken.py"
    model.write_text(
        "import torch\n"
        "def build_model():\n"
        "    raise RuntimeError('no model')\n"
        "def example_batch(batch_size):\n"
        "    return (torch.randn(batch_size, 16),)\n"
    )
    # (profile_model then replays it in its own process, where the user's error is reported as such)
    assert measure(load_model_file(model), [4, 8], "fp32", None) is None
