"""Memory accounting and batch linearity, on tiny models (meta device, so no allocation)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from advisor.profiler.counter import Counter
from advisor.profiler.profile import profile_model

MODELS = Path(__file__).parent / "models"
MLP = MODELS / "tiny_mlp.py"  # Linear(16, 32) -> ReLU -> Linear(32, 4): 676 parameters


def test_mlp_fp32_adamw_memory():
    p = profile_model(MLP, batch_size=4, device="meta")
    m = p.memory
    assert p.parameters == 676  # 16*32 + 32 + 32*4 + 4
    assert m.parameter_bytes == 2704  # 676 * 4
    assert m.gradient_bytes == 2704
    assert m.optimizer_state_bytes == 5424  # exp_avg + exp_avg_sq (2 * 2704) + 4 fp32 step counters (16)
    # saved for backward: the input x (16*4 B per sample) and the ReLU output (32*4), which the second Linear
    # also saves: one storage, counted once. The weights are parameters, not activations.
    assert m.activation_bytes.fixed == 0 and m.activation_bytes.per_sample == 192  # 64 + 128
    assert m.peak_bytes.at(4) >= m.parameter_bytes + m.gradient_bytes + m.optimizer_state_bytes
    assert m.temporary_peak_bytes.at(4) >= 0


def test_sgd_and_pure_bf16_memory():
    m = profile_model(MLP, batch_size=4, device="meta", optimizer="sgd").memory
    assert m.optimizer_state_bytes == 2704  # one momentum buffer per parameter
    m = profile_model(MLP, batch_size=4, device="meta", precision="bf16").memory
    assert m.parameter_bytes == 1352  # 676 * 2
    assert m.optimizer_state_bytes == 2720  # 2 * 1352 + 4 fp32 step counters (16)
    assert m.activation_bytes.per_sample == 96  # 16*2 + 32*2


def test_the_optimizer_step_recorded_is_the_steady_one():
    """SGD with momentum: the first step copies each gradient into a new buffer (a clone); every later step scales
    the buffer, adds the gradient and updates the parameter. The profile holds the later step."""
    p = profile_model(MLP, batch_size=4, device="meta", optimizer="sgd")  # meta: the multi-tensor path
    ops = {o.op: o for o in p.ops if o.phase == "optimizer"}
    assert "aten.clone" not in ops and "aten._foreach_mul_" in ops
    # buf.mul_(0.9) over the 4 parameter tensors: reads and writes 676 x 4 B; buf.add_(grad) then p.add_(buf):
    # each reads two 2,704-byte lists and writes one
    assert ops["aten._foreach_mul_"].bytes_read.at(4) == 2704 and ops["aten._foreach_mul_"].bytes_written.at(4) == 2704
    assert ops["aten._foreach_add_"].count == 2
    assert ops["aten._foreach_add_"].bytes_read.at(4) == 2 * 5408
    assert ops["aten._foreach_add_"].bytes_written.at(4) == 2 * 2704
    # the state the first step created is still counted as memory (one buffer per parameter)
    assert p.memory.optimizer_state_bytes == 2704


def test_mixed_precision_keeps_fp32_parameters_and_saves_bf16_activations():
    p = profile_model(MLP, batch_size=4, device="meta", precision="bf16-mixed")
    m = p.memory
    assert m.parameter_bytes == 2704 and m.gradient_bytes == 2704  # fp32 master weights and gradients
    # saved: bf16 x (16*2) and bf16 ReLU output (32*2) per sample; the bf16 copy of the second weight (4*32*2)
    # is fixed (the first weight's copy is not saved: x needs no gradient)
    assert m.activation_bytes.per_sample == 96 and m.activation_bytes.fixed == 256
    dtypes = {(o.op, o.phase): o.dtype for o in p.ops}
    assert dtypes[("aten.addmm", "forward")] == "bf16"
    assert all(o.dtype == "fp32" for o in p.ops if o.phase == "optimizer" and o.op != "aten._local_scalar_dense")


def test_saved_tensors_are_deduplicated_by_storage():
    x = torch.empty(100, device="meta", requires_grad=True)
    c = Counter()
    with c:
        y = x.exp()  # saves its output y (400 B)
        z = y * y.view(10, 10).view(100)  # saves y twice more, as views: same storage
    del z
    assert c.mem.saved == 400


def test_live_memory_and_peak_follow_tensors():
    c = Counter()
    with c:
        a = torch.empty(1000, device="meta") + 1  # 4000 B
        b = a * 2  # 4000 B more: peak 8000
        del a, b
        d = torch.empty(10, device="meta") + 1  # 40 B
    assert c.mem.peak == 8000
    assert c.mem.live == 40
    del d


def test_fitted_profile_predicts_another_batch_exactly():
    p3 = profile_model(MODELS / "tiny_gpt.py", batch_size=3, device="meta")
    p8 = profile_model(MODELS / "tiny_gpt.py", batch_size=8, device="meta")
    assert p3.linear_in_batch and p3.profiled_batch_sizes == [3, 6]
    assert p3.flops(8) == pytest.approx(p8.flops(8), rel=1e-12)
    assert p3.bytes(8) == pytest.approx(p8.bytes(8), rel=1e-12)
    assert p3.memory.activation_bytes.at(8) == pytest.approx(p8.memory.activation_bytes.at(8))
    opt = [o for o in p3.ops if o.phase == "optimizer"]
    assert opt and all(o.flops.per_sample == 0 for o in opt)  # the optimizer does not depend on the batch


def test_model_quadratic_in_batch_is_flagged(tmp_path):
    f = tmp_path / "pairs.py"
    f.write_text(
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__(); self.l = torch.nn.Linear(8, 8)\n"
        "    def forward(self, x):\n        h = self.l(x)\n        return h @ h.T  # batch x batch\n"
        "def build_model():\n    return M()\n"
        "def example_batch(n):\n    return torch.randn(n, 8)\n"
    )
    p = profile_model(f, batch_size=4, device="meta")
    assert not p.linear_in_batch
    assert "grows faster than the batch size" in p.linear_reason


def test_model_branching_on_batch_is_flagged(tmp_path):
    f = tmp_path / "branch.py"
    f.write_text(
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__(); self.l = torch.nn.Linear(8, 8)\n"
        "    def forward(self, x):\n        h = self.l(x)\n        return h.relu() if x.shape[0] > 4 else h\n"
        "def build_model():\n    return M()\n"
        "def example_batch(n):\n    return torch.randn(n, 8)\n"
    )
    p = profile_model(f, batch_size=4, device="meta")
    assert not p.linear_in_batch and "differ" in p.linear_reason
    assert p.flops(4) == profile_model(f, batch_size=4, device="meta").flops(4)


def test_checkpoint_bytes_keep_block_inputs():
    p = profile_model(MODELS / "tiny_gpt.py", batch_size=4, device="meta")
    m = p.memory
    # two blocks: each input is [B, 16, 32] fp32 = 2048 B per sample; the rule keeps those, what is saved
    # outside the blocks, and one block's saved tensors, which is far less than everything saved
    assert m.checkpoint_bytes.per_sample >= 2 * 2048
    assert m.checkpoint_bytes.per_sample < m.activation_bytes.per_sample
    # the batch holds 17 tokens per sample, the model trains on the first 16 (the embedding sees [4, 16])
    assert p.tokens_per_sample == 16 and p.input_shapes == ["input: [4, 17] int64"]


def test_module_paths_aggregate_repeated_layers():
    p = profile_model(MODELS / "tiny_gpt.py", batch_size=4, device="meta")
    fc = [o for o in p.ops if o.module == "blocks.*.fc" and o.op == "aten.addmm"]
    assert len(fc) == 1 and fc[0].count == 2  # both blocks' fc in one record
    assert {o.module for o in p.ops if o.phase == "backward"} >= {"blocks.*.fc", "head"}


def test_peak_is_that_of_a_steady_state_step():
    # AdamW creates its state lazily in the first step, after the forward and backward; from the second step on
    # it is resident throughout. At the end of the forward pass the parameters, the optimizer state and every
    # activation saved for backward are alive together, so a steady-state peak is at least their sum.
    p = profile_model(MODELS / "tiny_gpt.py", batch_size=8, device="meta", precision="bf16-mixed")
    m = p.memory
    assert m.peak_bytes.at(8) >= m.parameter_bytes + m.optimizer_state_bytes + m.activation_bytes.at(8)
