"""Layouts end to end: which ops tensor parallelism splits (read from the profile), the model structure, FP8,
profiles written before the structure was recorded, and the layout search against estimate() itself."""

from __future__ import annotations

import numpy as np
import pytest
from estimator_fixtures import toy_catalog

from advisor import api
from advisor.errors import UserError
from advisor.estimator.config import Config
from advisor.estimator.estimate import estimate
from advisor.estimator.layout import Layout
from advisor.estimator.parallel.tensor import roles
from advisor.estimator.passes import op_table
from advisor.estimator.roofline import STATE_INIT, profile_op_time
from advisor.estimator.search import search
from advisor.estimator.setup import setup_for, structure_of
from advisor.profiler.schema import Linear, OpRecord

REL = 1e-9


@pytest.fixture(scope="module")
def cat():
    return api.catalog()


def test_structure_is_read_from_the_records():
    llama = api.profile_from("llama3_70b")
    s = llama.structure
    assert (s.blocks, s.block_module, s.hidden, s.heads, s.kv_heads, s.seq_len) == (80, "layers.*", 8192, 64, 8, 8192)
    assert s.attention == "fused"
    assert s.parameters["block_sharded"] == 80 * (8192 * (8192 + 1024 + 1024 + 8192) + 3 * 8192 * 28672)
    # a profile written before the profiler stored the structure: derived from its records alone
    old = llama.model_copy(update={"structure": None})
    derived = structure_of(old)
    assert (derived.blocks, derived.hidden, derived.heads, derived.kv_heads, derived.seq_len) == (80, 8192, 64, 8, 8192)
    gpt2 = api.profile_from("gpt2_124m").structure
    assert (gpt2.blocks, gpt2.block_module, gpt2.hidden, gpt2.heads, gpt2.seq_len) == (12, "h.*", 768, 12, 1024)


def test_tensor_parallelism_splits_what_megatron_splits():
    prof = api.profile_from("llama3_70b")
    r = roles(prof, prof.structure)

    def role(op, module, phase="forward", shapes=""):
        i = next(
            i
            for i, o in enumerate(prof.ops)
            if o.op == op and o.module == module and o.phase == phase and o.shapes.startswith(shapes)
        )
        return r.region[i], r.sharded[i], r.core[i], r.block_matmul[i]

    assert role("aten.mm", "layers.*.attention.wq") == ("block", True, False, True)  # column-parallel
    assert role("aten.mm", "layers.*.feed_forward.w2") == ("block", True, False, True)  # row-parallel
    assert role("aten._scaled_dot_product_flash_attention", "layers.*.attention") == ("block", True, True, False)
    assert role("aten.silu", "layers.*.feed_forward") == ("block", True, False, False)  # [b, s, 28672]
    assert role("aten.pow", "layers.*.attention_norm") == ("block", False, False, False)  # hidden-wide: whole
    assert role("aten.add", "layers.*", shapes="[1, 8192, 8192]") == ("block", False, False, False)  # residual
    assert role("aten.embedding", "tok_embeddings") == ("before", False, False, False)
    assert role("aten.mm", "output") == ("after", True, False, False)  # vocabulary-parallel head
    assert role("aten._log_softmax", "") == ("after", True, False, False)  # [8192, 128256]
    assert role("aten._foreach_add_", "optimizer", "optimizer")[0] == "optimizer"
    # wq's backward: the input gradient g·W (reads the weight) and the weight gradient gᵀ·x (writes one, 8192² bf16
    # per block: 134 MB, x 80 blocks = 10.7 GB of fixed output); both are weight matmuls, neither attention core
    backward = [i for i, o in enumerate(prof.ops) if o.module == "layers.*.attention.wq" and o.op == "aten.mm"
                and o.phase == "backward"]  # fmt: skip
    assert len(backward) == 2 and all(r.block_matmul[i] and not r.core[i] for i in backward)
    assert sorted(prof.ops[i].bytes_written.fixed for i in backward) == [0.0, 2 * 8192**2 * 80]


def test_the_op_table_is_profile_op_time_per_record(cat):
    """passes.py's vectorized roofline gives every record of every shipped transformer the time of
    roofline.profile_op_time, on a GPU, a TPU and a CPU, in three precisions."""
    for name in ("gpt2_124m", "llama3_8b", "vit_b16"):
        prof = api.profile_from(name)
        r = roles(prof, prof.structure)
        for dev_id in ("h100-sxm", "tpu-v5p", "a100-80gb-sxm", "v100-sxm2-16gb", "h100-pcie", "rtx-4090"):
            device = cat.devices[dev_id]
            eff = cat.efficiency[device.efficiency]
            for precision in ("bf16-mixed", "fp32", "tf32"):
                table = op_table(prof, r, device, eff, precision)
                from advisor.estimator.passes import record_times

                got = record_times(table, [3], [1], [1], [False])["seconds"][0]
                # the optimizer's state creation (the profiled first step) is not part of a steady-state step
                want = [
                    0.0
                    if o.phase == "optimizer" and o.op in STATE_INIT
                    else profile_op_time(
                        o, device, eff, prof.precision, precision, 3, prof.bytes(3), prof.batch_size
                    ).seconds
                    for o in prof.ops
                ]
                assert got == pytest.approx(np.asarray(want), rel=1e-12)


def test_fp8_mixed_runs_the_block_matmuls_on_fp8_units(cat):
    prof = api.profile_from("llama3_8b")
    r = roles(prof, prof.structure)
    h100 = cat.devices["h100-sxm"]
    table = op_table(prof, r, h100, cat.efficiency[h100.efficiency], "fp8-mixed")
    block_mm = sum(r.block_matmul)
    # wq wk wv wo w1 w3 w2: forward, input gradient and weight gradient (Transformer Engine runs all three in FP8)
    assert table.dtypes.count("fp8") == block_mm == 21
    assert len(table.dtypes) == len(prof.ops) + block_mm  # one activation cast per FP8 matmul
    base = dict(device="h100-sxm", instance="aws-p5.48xlarge", devices_per_node=8, global_batch=64)
    bf16 = estimate(prof, cat, Config(**base, precision="bf16-mixed"))
    fp8 = estimate(prof, cat, Config(**base, precision="fp8-mixed"))
    assert fp8.step_time_s < bf16.step_time_s
    assert any("fp8-mixed" in a and "MFU against the bf16 peak" in a for a in fp8.assumptions)
    with pytest.raises(UserError) as err:
        estimate(prof, cat, Config(device="a100-80gb-sxm", precision="fp8-mixed"))
    assert "has no fp8 tensor units" in err.value.line() and "use --precision" in err.value.line()


def test_the_profilers_fp8_dtypes_run_at_the_fp8_peak(cat):
    h100 = cat.devices["h100-sxm"]
    eff = cat.efficiency[h100.efficiency]
    for dtype in ("fp8_e4m3", "fp8_e5m2"):
        op = OpRecord(op="aten._scaled_mm", phase="forward", category="matrix", dtype=dtype, module="m", count=1,
                      flops=Linear(per_sample=1e12), bytes_read=Linear(), bytes_written=Linear())  # fmt: skip
        t = profile_op_time(op, h100, eff, "bf16-mixed", "bf16-mixed", 1)
        eta = eff.matrix[-1].efficiency  # 1e12 FLOPs per call: the curve's top step
        assert t.dtype == "fp8" and t.unit == "matrix"
        assert t.seconds == pytest.approx(1e12 / (h100.matrix_flops.fp8 * eta) + eff.op_overhead_s, rel=REL)


def test_tensor_parallel_all_reduces_per_block():
    """gpt2 on the toy node with tp 2: 4 all-reduces per block of b·s·h bf16 values over the 50 GB/s switch."""
    prof = api.profile_from("gpt2_124m")
    layout = Layout(tp=2, dp=4, sequence_parallel=True)
    config = Config(device="toy", instance="toy-8x", devices_per_node=8, layout=layout, micro_batch=2, global_batch=8)
    est = estimate(prof, toy_catalog(), config)
    message = 2 * 1024 * 768 * 2  # b·s·h·2 bytes = 3,145,728
    all_reduce = 2 * (1 / 2) * message / 50e9 + 10e-6  # 2(n−1)/n · S / busbw + α = 72.91456 µs
    assert est.parts["tp"] == pytest.approx(12 * 4 * all_reduce, rel=REL)  # 12 blocks × 4, one micro-batch
    assert est.comm_by_dim["tp"].bytes_per_step == 12 * 4 * message and est.comm_by_dim["tp"].fabric == "toyswitch"
    assert sum(est.parts.values()) == pytest.approx(est.step_time_s, rel=REL)


def test_old_profiles_still_estimate_layouts(cat):
    prof = api.profile_from("gpt2_124m")
    memory = prof.memory.model_copy(update={"activation_parts": None})
    old = prof.model_copy(update={"structure": None, "memory": memory})
    config = Config(device="h100-sxm", instance="aws-p5.48xlarge", devices_per_node=8,
                    layout=Layout(tp=2, pp=2, dp=2, sequence_parallel=True), global_batch=16)  # fmt: skip
    est = estimate(old, cat, config)
    assert est.stage_blocks == [6, 6] and est.step_time_s > 0
    assert any("10/34 split of Korthikanti" in a for a in est.assumptions)


def test_the_search_agrees_with_estimate(cat):
    """Every layout the search ranks, estimated by estimate() with the same micro-batch, gives the same step
    time and memory: the search is estimate()'s own arithmetic over arrays."""
    prof = api.profile_from("llama3_8b")
    inst = cat.instances["aws-p5.48xlarge"]
    device = cat.devices[inst.device]
    setup = setup_for(prof, device, cat.efficiency[device.efficiency], inst, "bf16-mixed", 8, 2)
    found = search(setup, [2], 64, exhaustive=True)
    assert len(found) > 500
    rng = np.random.default_rng(0)
    for i in rng.choice(len(found), 25, replace=False):
        layout = found.layout(int(i))
        config = Config(device=device.id, instance=inst.id, devices_per_node=8, nodes=2, precision="bf16-mixed",
                        layout=layout, micro_batch=int(found.micro[i]), global_batch=64)  # fmt: skip
        est = estimate(prof, cat, config)
        assert est.step_time_s == pytest.approx(float(found.step[i]), rel=1e-9), layout.label()
        assert est.memory.total_bytes == pytest.approx(float(found.memory[i]), rel=1e-9), layout.label()
        assert est.mfu == pytest.approx(float(found.mfu[i]), rel=1e-9)


def test_pass_times_are_the_scalar_step_of_the_device(cat):
    """The vectorized passes with what the device really runs (fused recurrent layers, the optimizer's state
    creation left out, the host's issue rate on a GPU, module calls on a CPU) sum per phase to the scalar
    roofline.profile_times + host_bound of the same profile: one model, two implementations."""
    from advisor.estimator.passes import pass_times
    from advisor.estimator.roofline import host_bound, profile_times

    for name in ("lstm", "resnet50", "mobilenet_v2"):
        prof = api.profile_from(name)
        r = roles(prof, prof.structure)
        for dev_id in ("a100-80gb-sxm", "rtx-4090", "epyc-9654", "epyc-9654 calibrated"):
            device = cat.devices[dev_id.split()[0]]
            eff = cat.efficiency[device.efficiency]
            if dev_id.endswith("calibrated"):  # a calibration's convolution setup: 70 µs forward, 150 µs backward
                eff = eff.model_copy(
                    update={"op_setup_s": {"aten.convolution": 7e-5, "aten.convolution_backward": 1.5e-4}}
                )
            precision = "fp32" if device.kind == "cpu" else "bf16-mixed"
            passes = pass_times(op_table(prof, r, device, eff, precision), [5], [1], [1], [False])["seconds"]
            sums, calls = {}, {}
            for phase, t in profile_times(prof, device, eff, precision, 5):
                sums.setdefault(phase, [0.0] * 6)[0] += t.seconds
                calls[phase] = calls.get(phase, 0.0) + t.host_calls
            want = {p: v[0] for p, v in host_bound(sums, calls, prof, eff).items()}
            for phase in ("forward", "backward"):
                got = sum(float(passes[(region, phase)][0]) for region in ("before", "block", "after"))
                assert got == pytest.approx(want[phase], rel=1e-9), (name, dev_id, phase)
            assert float(passes[("optimizer", "optimizer")][0]) == pytest.approx(want["optimizer"], rel=1e-9)


def test_fused_kernels_belong_to_the_model_not_the_layout():
    """uses_framework: a framework's fused kernels for models of 1e9 parameters or more and for fp8 recipes,
    whatever the layout; --kernels eager|fused overrides."""
    from advisor.estimator.setup import uses_framework

    assert not uses_framework("auto", 124e6, False)  # GPT-2 in eager PyTorch
    assert uses_framework("auto", 124e6, True)  # an fp8 recipe runs Transformer Engine
    assert uses_framework("auto", 8e9, False)  # Llama 3 8B
    assert not uses_framework("eager", 8e9, True)
    assert uses_framework("fused", 124e6, False)


def test_framework_activations_are_at_most_megatrons():
    """Under a framework the blocks keep at most 34·s·h bytes per sample (Korthikanti Table 2, 16-bit): GPT-2
    (s 1024, h 768, 12 blocks): hidden-wide 10·1024·768·12 = 94,371,840 B (profiled 113,246,208: eager keeps
    more), the rest 24·1024·768·12 = 226,492,416 B (profiled 227,278,848), no attention scores."""
    from advisor.estimator.setup import activation_parts, framework_activations

    prof = api.profile_from("gpt2_124m")
    eager = activation_parts(prof, prof.structure.blocks)
    assert eager.block_replicated.per_sample == 113_246_208
    assert eager.block_sharded.per_sample == 227_278_848
    fused = framework_activations(prof, eager, prof.structure)
    assert fused.block_replicated.per_sample == 94_371_840
    assert fused.block_sharded.per_sample == 226_492_416
    assert fused.block_scores.per_sample == 0
    assert fused.block_inputs == eager.block_inputs and fused.before == eager.before


def test_framework_activations_keep_the_scores_of_unfused_attention():
    """A model that writes its attention scores out (Megatron-LM before flash attention) keeps them under a
    framework too: Korthikanti's 5·a·s/h term. The same GPT-2 profile with its structure marked unfused keeps
    its block_scores line; marked fused, the scores go."""
    from advisor.estimator.setup import activation_parts, framework_activations
    from advisor.profiler.schema import Linear

    prof = api.profile_from("gpt2_124m")
    eager = activation_parts(prof, prof.structure.blocks)
    scores = Linear(fixed=0.0, per_sample=5.0 * 12 * 1024 * 1024 * 12)  # 5 B · a 12 · s² · 12 blocks
    eager = eager.model_copy(update={"block_scores": scores})
    unfused = prof.structure.model_copy(update={"attention": "unfused"})
    fused = prof.structure.model_copy(update={"attention": "fused"})
    assert framework_activations(prof, eager, unfused).block_scores == scores
    assert framework_activations(prof, eager, fused).block_scores.per_sample == 0


def test_kernels_option_changes_only_the_elementwise_share(cat):
    """GPT-2 on one H100: eager and auto agree (no framework needed); fused is faster by (1 − 0.5) of the
    blocks' elementwise time per micro-batch (Hopper's fused_elementwise is 0.5)."""
    from advisor.estimator.passes import pass_times

    prof = api.profile_from("gpt2_124m")
    eager = api.estimate(prof, "h100-sxm", strategy=None, checkpointing=False, kernels="eager", cat=cat)
    auto = api.estimate(prof, "h100-sxm", strategy=None, checkpointing=False, cat=cat)
    fused = api.estimate(prof, "h100-sxm", strategy=None, checkpointing=False, kernels="fused", cat=cat)
    assert auto.step_time_s == eager.step_time_s
    h100 = cat.devices["h100-sxm"]
    table = op_table(prof, roles(prof, prof.structure), h100, cat.efficiency[h100.efficiency], "bf16-mixed")
    sums = pass_times(table, [eager.micro_batch], [1], [1], [False])["seconds"]
    elementwise = float(sums[("elementwise", "forward")][0] + sums[("elementwise", "backward")][0])
    saved = eager.accumulation * (1 - 0.5) * elementwise
    assert eager.step_time_s - fused.step_time_s == pytest.approx(saved, rel=1e-6)
    assert any(
        a.startswith("fused kernels (--kernels fused): the blocks' elementwise ops keep 0.5") for a in fused.assumptions
    )
    assert not any(a.startswith("fused kernels") for a in eager.assumptions + auto.assumptions)
