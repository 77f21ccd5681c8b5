"""The parallel dimensions' formulas against hand-derived numbers: activations per layout (Korthikanti et al. 2022,
Table 2), ZeRO memory, the pipeline's stages, bubble and in-flight micro-batches, ring attention, collectives over
fabric tiers, and each layout rule's one-line error. The toy hardware is estimator_fixtures.py's (read its
docstring): links at 0.5 of 100 GB/s inside a node and 50 GB/s per node between nodes, 10 µs per collective."""

from __future__ import annotations

import numpy as np
import pytest
from estimator_fixtures import toy_catalog, toy_device, toy_efficiency, toy_instance, toy_profile

from advisor.errors import UserError
from advisor.estimator.comm import Fabric, group_parts, p2p_time, placement
from advisor.estimator.config import Config
from advisor.estimator.estimate import estimate
from advisor.estimator.layout import Layout, layout_for
from advisor.estimator.memory import _block_activations
from advisor.estimator.parallel import check, context, data, pipeline
from advisor.estimator.setup import setup_for
from advisor.estimator.step import layout_arrays
from advisor.profiler.schema import ActivationParts, Linear, Structure

REL = 1e-9
# Korthikanti et al. 2022 Table 2 at GPT-3 175B's shape: s = 2048, b = 1, h = 12288, a = 96 heads, t = 8.
S, B, H, A, T, LAYERS = 2048, 1, 12288, 96, 8, 4
SBH = S * B * H  # 25,165,824
SCORES = 5 * A * S * S * B  # 5·a·s²·b = 2,013,265,920 (softmax out, its dropout mask and output)


def gpt_setup():
    """A profile whose saved tensors are exactly Korthikanti's per layer: 10·sbh whole under TP (norm and
    linear inputs, dropout masks), 24·sbh split, 5·a·s²·b attention scores, the block input 2·sbh."""
    per = lambda x: Linear(per_sample=LAYERS * x)  # noqa: E731 - totals over the blocks, per sample
    parts = ActivationParts(
        block_replicated=per(10 * SBH),
        block_sharded=per(24 * SBH),
        block_scores=per(SCORES),
        block_inputs=per(2 * SBH),
    )
    prof = toy_profile(
        memory=toy_profile().memory.model_copy(update={"activation_parts": parts}),
        structure=Structure(
            blocks=LAYERS, block_module="layers.*", hidden=H, heads=A, kv_heads=A, seq_len=S, attention="unfused"
        ),  # fmt: skip
    )
    # eager PyTorch, as profiled (a framework's kernels cap these: test_parallel_estimate.py)
    return setup_for(prof, toy_device(), toy_efficiency(), toy_instance(), "bf16-mixed", 8, 1, kernels="eager")


def activations_per_layer(tp=1, sp=False, recompute="none", cp=1) -> float:
    setup = gpt_setup()
    layout = Layout(tp=tp, cp=cp, dp=8 // (tp * cp), sequence_parallel=sp, recompute=recompute)
    lay = layout_arrays(setup, layout, 1)
    return float(_block_activations(setup, lay, np.asarray([B]), 1.0, LAYERS)[0]) / LAYERS


def test_activations_per_layer_follow_korthikanti_table_2():
    # no parallelism: sbh(34 + 5as/h) = 25,165,824 × (34 + 80) = 2,868,903,936 bytes
    assert activations_per_layer() == pytest.approx(SBH * (34 + 5 * A * S / H), rel=REL)
    # tensor parallel: sbh(10 + 24/t + 5as/(ht)) = sbh × (10 + 3 + 10) = 578,813,952
    assert activations_per_layer(tp=T) == pytest.approx(SBH * (10 + 24 / T + 5 * A * S / (H * T)), rel=REL)
    # tensor + sequence parallel: sbh(34 + 5as/h)/t = 358,612,992
    assert activations_per_layer(tp=T, sp=True) == pytest.approx(SBH * (34 + 5 * A * S / H) / T, rel=REL)
    # tensor parallel + selective recomputation: sbh(10 + 24/t) = sbh × 13 = 327,155,712
    assert activations_per_layer(tp=T, recompute="selective") == pytest.approx(SBH * (10 + 24 / T), rel=REL)
    # tensor + sequence parallel + selective recomputation: 34·sbh/t = 106,954,752
    assert activations_per_layer(tp=T, sp=True, recompute="selective") == pytest.approx(34 * SBH / T, rel=REL)


def test_full_recompute_keeps_the_block_inputs_and_one_block():
    # L·2sbh kept, plus one whole layer alive while it is recomputed: (4·2 + 114)·sbh / 4 per layer
    whole = SBH * (34 + 5 * A * S / H)
    assert activations_per_layer(recompute="full") == pytest.approx((LAYERS * 2 * SBH + whole) / LAYERS, rel=REL)
    # with SP the inputs are split too: 2sbh/t, and the recomputed layer is the TP+SP one
    expected = (LAYERS * 2 * SBH / T + whole / T) / LAYERS
    assert activations_per_layer(tp=T, sp=True, recompute="full") == pytest.approx(expected, rel=REL)


def test_context_parallelism_divides_activations_by_cp():
    assert activations_per_layer(tp=2, sp=True, cp=2) == pytest.approx(activations_per_layer(tp=2, sp=True) / 2)


def test_zero_stages_memory_for_mixed_precision_adam():
    w = data.widths("bf16-mixed", 2)  # Adam: m and v
    psi, n = 1e9, 8
    parts = {lvl: sum(data.state_memory(psi, psi, lvl, n, w)) for lvl in range(4)}
    assert parts[0] == pytest.approx(16 * psi)  # DDP: fp32 weights and grads, m, v: 4 + 4 + 8
    assert parts[1] == pytest.approx(4 * psi + 12 * psi / n)  # ZeRO-1: 5.5e9
    assert parts[2] == pytest.approx(2 * psi + 14 * psi / n)  # ZeRO-2: 3.75e9
    assert parts[3] == pytest.approx(16 * psi / n)  # ZeRO-3 / FSDP: 2e9
    pure = data.widths("bf16", 2)
    assert sum(data.state_memory(psi, psi, 1, n, pure)) == pytest.approx(4 * psi + 4 * psi / n)  # 2 + 2 + 4/N


def test_zero1_traffic_reduce_scatters_and_gathers_once():
    # 1e9 parameters, 8 replicas in one node at 50 GB/s achievable: reduce-scatter of 2e9 B of bf16 gradients
    # 7/8 · 2e9 / 50e9 + 10 µs = 0.03501 s, all-gather of the bf16 weights the same; backward 0.02 s hides the
    # reduce-scatter but for 0.01501 s, the forward 0.05 s hides the all-gather entirely
    fabric = Fabric(intra_bw=50e9, intra_type="sw", inter_bw=25e9, inter_type="net", latency_s=10e-6, per_node=8,
                    domain=8)  # fmt: skip
    w = data.widths("bf16-mixed", 2)
    one = lambda x: np.asarray([x])  # noqa: E731
    out = data.traffic(one(1e9), one(1e9), one(1), one(8), one(1), one(4), one(0.05), one(0.02), w, fabric)
    assert out["total_s"][0] == pytest.approx(2 * 0.03501, rel=REL)
    assert out["exposed_s"][0] == pytest.approx(0.03501 - 0.02, rel=REL)
    zero2 = data.traffic(one(1e9), one(1e9), one(2), one(8), one(1), one(4), one(0.05), one(0.02), w, fabric)
    assert zero2["total_s"][0] == pytest.approx(5 * 0.03501, rel=REL)  # 4 micro-batches' reduce-scatters + 1 gather
    assert zero2["exposed_s"][0] == pytest.approx(4 * (0.03501 - 0.02), rel=REL)


def test_pipeline_stages_bubble_and_in_flight():
    assert pipeline.stage_blocks(80, 4) == [20, 20, 20, 20]
    assert pipeline.stage_blocks(126, 16) == [7] + [8] * 14 + [7]  # Llama 3 405B: one fewer on the first and last
    assert pipeline.stage_blocks(80, 6) == [13, 14, 14, 13, 13, 13]
    # even stages of 1 s per micro-batch: m·T + (p−1)·T/v, bubble fraction (p−1)/(v·m)
    busy, bubble = pipeline.step_parts(1.0, 1.0, 1.0, 4.0, np.asarray(4), np.asarray(1), np.asarray(16))
    assert (busy, bubble) == (16.0, 3.0)  # (4−1)/16 of the busy time
    busy, bubble = pipeline.step_parts(1.0, 1.0, 1.0, 4.0, np.asarray(4), np.asarray(3), np.asarray(16))
    assert bubble == pytest.approx(1.0)  # (4−1)/(3·16) × 16 s
    # uneven: the slowest stage (1.5 s) sets the pace; the others' share of the fill and drain is the bubble
    busy, bubble = pipeline.step_parts(1.5, 1.0, 1.0, 4.5, np.asarray(4), np.asarray(1), np.asarray(8))
    assert (busy, bubble) == (12.0, 3.0)
    assert pipeline.in_flight(np.asarray(4), np.asarray(1), np.asarray(16)) == 4  # 1F1B: pp on the first stage
    assert pipeline.in_flight(np.asarray(4), np.asarray(1), np.asarray(2)) == 2  # fewer micro-batches than stages
    # interleaved: × (1 + (p−1)/(p·v)) = 4 × (1 + 3/8) = 5.5
    assert pipeline.in_flight(np.asarray(4), np.asarray(2), np.asarray(16)) == pytest.approx(5.5)


def test_ring_attention_hides_behind_the_attention_compute():
    # cp 4: 3 steps of 10 ms forward (30 ms) against 25 ms of attention, 3 × 20 ms backward against 80 ms
    total, exposed = context.ring(0.01, 4, 0.025, 0.08, False)
    assert total == pytest.approx(0.09) and exposed == pytest.approx(0.005)
    total, exposed = context.ring(0.01, 4, 0.025, 0.08, True)  # full recomputation sends the forward again
    assert total == pytest.approx(0.12) and exposed == pytest.approx(0.01)
    st = Structure(blocks=80, block_module="layers.*", hidden=8192, heads=64, kv_heads=8, seq_len=8192,
                   attention="fused")  # fmt: skip
    # K and V of 8192/4 tokens × 8 KV heads / tp 2 × 128 wide, bf16: 2 · 2048 · 4 · 128 · 2 = 4,194,304 bytes
    assert context.kv_chunk_bytes(st, 1, 4, 2, 2) == 4_194_304
    assert context.kv_chunk_bytes(st, 1, 4, 16, 2) == 2 * 2048 * 1 * 128 * 2  # tp > kv heads: one head each


def test_groups_are_placed_on_fabric_tiers():
    assert placement(8, 1, 8) == (8, 1)  # tensor parallel inside a node
    assert placement(16, 8, 8) == (1, 16)  # data parallel 8 apart: one rank per node
    assert placement(8, 2, 8) == (4, 2)  # stride 2: four per node, over two nodes
    fabric = Fabric(intra_bw=50e9, intra_type="sw", inter_bw=25e9, inter_type="net", latency_s=10e-6, per_node=8,
                    domain=8)  # fmt: skip
    # 4 inside (3/4 · 1e9 / 50e9 + α), then 2 nodes: every one of the node's 8 devices moves 1e9/4 at 25e9/8
    intra, inter = group_parts("reduce_scatter", 1e9, 8, 2, fabric)
    assert intra == pytest.approx(10e-6 + 0.75 * 1e9 / 50e9, rel=REL)
    assert inter == pytest.approx(10e-6 + 0.5 * 1e9 * 8 / (4 * 25e9), rel=REL)
    # a pipeline send across nodes shares the node's network with the other 7 devices
    assert p2p_time(1e8, 4, 8, fabric) == (pytest.approx(10e-6 + 1e8 * 8 / 25e9), True)
    assert p2p_time(1e8, 4, 1, fabric) == (pytest.approx(10e-6 + 1e8 / 50e9), False)


def tiny_llama_structure() -> Structure:
    return Structure(blocks=12, block_module="layers.*", hidden=768, heads=12, kv_heads=4, seq_len=1024,
                     attention="fused")  # fmt: skip


@pytest.mark.parametrize(
    ("layout", "world", "fragments"),
    [
        (dict(tp=5), 40, ["--tp 5 does not divide the 12 attention heads", "use --tp 4 or 6"]),
        (dict(pp=16), 16, ["--pp 16 is more than the 12 repeated blocks", "use --pp 12 or less"]),
        (dict(cp=3), 3, ["--cp 3 does not divide the sequence of 1024 tokens", "use --cp 2 or 4"]),
        (
            dict(pp=4, vpp=4),
            4,
            ["--vpp 4 with --pp 4", "pp·vpp = 16 chunks, and the model has 12 blocks", "use --vpp 2 or 3"],
        ),
        (dict(tp=2, dp=3), 8, ["tp·pp·cp·dp = 2·1·1·3 = 6 is not the 8 devices", "use dp = 4"]),
    ],
)
def test_each_layout_rule_names_the_rule_and_the_nearest_valid_values(layout, world, fragments):
    dp = layout.pop("dp", None)
    model = layout.get("tp", 1) * layout.get("pp", 1) * layout.get("cp", 1)
    lay = Layout(**layout, dp=dp or max(world // model, 1))
    with pytest.raises(UserError) as err:
        check(lay, tiny_llama_structure(), world, 8)
    for fragment in fragments:
        assert fragment in err.value.line()


def test_layout_rules_of_the_words_themselves():
    with pytest.raises(UserError) as err:
        Layout(tp=1, sequence_parallel=True)
    assert "sequence parallelism splits along the tensor-parallel group, and tp is 1" in err.value.line()
    with pytest.raises(UserError) as err:
        layout_for(8, tp=3)
    assert "tp·pp·cp = 3·1·1 = 3 must divide the 8 devices" in err.value.line() and "1, 2, 4, 8" in err.value.line()
    # the older words: --strategy fsdp is the sharding, --checkpointing is full recomputation, SP on with tp
    lay = layout_for(16, tp=4, strategy="fsdp", checkpointing=True)
    assert (lay.dp, lay.sharding, lay.recompute, lay.sequence_parallel) == (4, "fsdp", "full", True)
    assert Config(device="toy", devices_per_node=8, strategy="zero1").layout == Layout(dp=8, sharding="zero1")


def test_global_batch_must_be_a_multiple_of_dp_times_micro_batch():
    config = Config(device="toy", instance="toy-8x", devices_per_node=8, global_batch=100, micro_batch=4)
    with pytest.raises(UserError) as err:
        estimate(toy_profile(), toy_catalog(), config)
    # 8 replicas × micro-batch 4 = 32: 96 or 128
    assert "not a multiple of dp × micro-batch = 8 × 4 = 32" in err.value.line()
    assert "use --global-batch 96 or 128" in err.value.line()
