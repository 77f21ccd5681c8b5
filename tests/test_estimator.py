"""The estimator's formulas against hand-derived numbers on the toy hardware and profile of
estimator_fixtures.py (read its docstring first: every figure below starts there)."""

from __future__ import annotations

import pytest
from estimator_fixtures import toy_catalog, toy_device, toy_efficiency, toy_instance, toy_profile

from advisor.errors import UserError
from advisor.estimator.comm import Fabric, collective_parts, collective_time
from advisor.estimator.config import Config, Workload
from advisor.estimator.estimate import billed_cost, check_precision, estimate, scaled_device, steps_for
from advisor.estimator.memory import max_micro_batch, memory_for, repeated_blocks
from advisor.estimator.roofline import op_time

REL = 1e-9
# Per-phase times at micro-batch 1 (each op: max(F/(P·η), B/(BW·η)) + calls × 10 µs):
FWD = 1e12 / (1e14 * 0.5) + 10e-6 + 4 * (1e9 / (1e12 * 0.8)) + 4 * 10e-6  # mm 0.02 + gelu 4 × 1.25 ms = 0.02505
BWD = 2e12 / (1e14 * 0.5) + 10e-6  # 0.04001
OPT = 16e9 / (1e12 * 0.8) + 10e-6  # 0.02001


def single(**over) -> Config:
    return Config(device="toy", **over)


def node(**over) -> Config:
    """The 8-device toy node; global batch 8 × nodes (one sample per device) unless told otherwise."""
    base = {"device": "toy", "instance": "toy-8x", "devices_per_node": 8, "strategy": "ddp"}
    if "global_batch" not in over and "micro_batch" not in over:
        base["global_batch"] = 8 * over.get("nodes", 1)
    return Config(**{**base, **over})


def test_op_time_is_the_larger_of_compute_and_memory_plus_overhead():
    dev, eff = toy_device(), toy_efficiency()
    t = op_time(dev, eff, 1e12, 1e9, 1, "matrix", "bf16")
    assert t.seconds == pytest.approx(1e12 / (1e14 * 0.5) + 10e-6, rel=REL)  # 0.02 s compute + 10 µs
    assert (t.unit, t.compute_s, t.memory_s) == ("matrix", pytest.approx(0.02), 0.0)
    t = op_time(dev, eff, 1e9, 4e9, 1, "vector", "bf16")  # no bf16 vector rate: the fp32 one, 5e12 achievable
    assert t.seconds == pytest.approx(4e9 / 8e11 + 10e-6, rel=REL)  # memory bound: 5 ms (compute only 0.2 ms)
    assert t.memory_s == pytest.approx(5e-3) and t.compute_s == 0.0


def test_single_device_step_mfu_and_phase_bounds():
    est = estimate(toy_profile(), toy_catalog(), single())
    assert est.phases["forward"].seconds == pytest.approx(FWD, rel=REL)  # 0.02505
    assert est.phases["backward"].seconds == pytest.approx(BWD, rel=REL)  # 0.04001
    assert est.phases["optimizer"].seconds == pytest.approx(OPT, rel=REL)  # 0.02001
    assert est.step_time_s == pytest.approx(FWD + BWD + OPT, rel=REL)  # 0.08507
    assert [est.phases[p].bound for p in ("forward", "backward", "optimizer")] == ["compute", "compute", "memory"]
    assert est.compute_s == pytest.approx(0.02 + 0.04)  # the two matmuls
    assert est.memory_bound_s == pytest.approx(0.005 + 0.02)  # gelu + optimizer
    assert est.overhead_s == pytest.approx(7 * 10e-6)  # 1 + 4 + 1 + 1 calls
    # MFU: (fwd 1e12 + 1e9 + bwd 2e12) FLOPs / (0.08507 s × 1e14) = 0.35277
    assert est.mfu == pytest.approx(3.001e12 / ((FWD + BWD + OPT) * 1e14), rel=REL)
    assert est.scaling_efficiency == pytest.approx(1.0)
    assert est.comm.total_s == 0


def test_memory_parts_mixed_adam_is_16_bytes_per_parameter():
    m = memory_for(toy_profile(), single(), toy_device(), toy_efficiency(), None, 3)
    assert (m.parameter_bytes, m.gradient_bytes, m.optimizer_state_bytes) == (4e9, 4e9, 8e9)  # 4 + 4 + 8 B × 1e9
    assert m.activation_bytes == pytest.approx(6e9)  # 2e9 per sample × 3
    assert m.reserve_bytes == pytest.approx(1e9 + 0.1 * 100e9)  # 1 GB + 10 % of 100 GB = 11 GB
    assert m.total_bytes == pytest.approx(16e9 + 6e9 + 11e9)  # 33 GB
    assert m.headroom_bytes == pytest.approx(67e9) and m.fits


def test_pure_bf16_halves_the_state_and_checkpointing_keeps_block_inputs():
    m = memory_for(toy_profile(), single(precision="bf16", checkpointing=True), toy_device(), toy_efficiency(), None, 2)
    assert (m.parameter_bytes, m.gradient_bytes, m.optimizer_state_bytes) == (2e9, 2e9, 4e9)  # 2 + 2 + 4 B
    assert m.activation_bytes == pytest.approx(1e9)  # checkpoint_bytes 0.5e9 × 2 (bf16 both: no rescale)


def test_fsdp_shards_16_psi_over_n_and_holds_two_gathered_units():
    cfg = node(strategy="fsdp")
    m = memory_for(toy_profile(), cfg, toy_device(), toy_efficiency(), toy_instance(), 1)
    assert m.parameter_bytes + m.gradient_bytes + m.optimizer_state_bytes == pytest.approx(16e9 / 8)  # 16Ψ/N
    assert repeated_blocks(toy_profile()) == 4  # gelu under 'layers.*' ran 4 times
    assert m.temporary_bytes == pytest.approx(2 * 1e9 / 4 * 2)  # 2 units × Ψ/4 blocks × 2 B (bf16) = 1 GB


def test_ddp_keeps_a_second_copy_of_the_gradients_in_buckets():
    m = memory_for(toy_profile(), node(), toy_device(), toy_efficiency(), toy_instance(), 1)
    assert m.temporary_bytes == pytest.approx(4e9)  # 1e9 params × 4 B


def test_largest_micro_batch_in_closed_form():
    # 16 GB states + 11 GB reserve + 2 GB × b ≤ 100 GB  ->  b ≤ 36.5
    args = (toy_profile(), single(), toy_device(), toy_efficiency(), None)
    assert max_micro_batch(*args, limit=1000) == 36
    assert max_micro_batch(*args, limit=10) == 10
    big = toy_profile(
        memory=toy_profile().memory.model_copy(update={"parameter_bytes": 4e9}),
        parameters=6e9,
        trainable_parameters=6e9,
    )  # 96 GB of state: nothing fits
    assert max_micro_batch(big, single(), toy_device(), toy_efficiency(), None, limit=8) == 1


def test_all_reduce_ring_and_hierarchy():
    fabric = Fabric(intra_bw=50e9, intra_type="sw", inter_bw=25e9, inter_type="net", latency_s=10e-6)
    # 2(n−1)/n · S / busbw + α = 2·7/8 · 4e9 / 50e9 + 10 µs = 0.14001 s
    assert collective_time("all_reduce", 4e9, 8, 1, fabric) == pytest.approx(0.14001, rel=REL)
    assert collective_time("all_gather", 4e9, 8, 1, fabric) == pytest.approx(0.07001, rel=REL)  # (n−1)/n
    # two nodes: inside (0.14001) then between them 2·1/2 · 4e9 / 25e9 + 10 µs = 0.16001
    assert collective_parts("all_reduce", 4e9, 8, 2, fabric) == pytest.approx((0.14001, 0.16001), rel=REL)
    assert collective_time("all_reduce", 4e9, 1, 1, fabric) == 0.0


def test_ddp_all_reduce_overlaps_the_backward_pass():
    est = estimate(toy_profile(), toy_catalog(), node())
    # grads 4e9 B over the switch at 0.5 × 100 GB/s: 0.14001 s; hidden behind backward 0.04001 -> 0.1 exposed
    assert est.comm.total_s == pytest.approx(0.14001, rel=REL)
    assert est.comm.exposed_s == pytest.approx(0.14001 - BWD, rel=REL)
    assert est.comm.bound == "toyswitch"
    assert est.step_time_s == pytest.approx(FWD + BWD + OPT + 0.1, rel=REL)
    assert est.scaling_efficiency == pytest.approx((FWD + BWD + OPT) / (FWD + BWD + OPT + 0.1), rel=REL)
    assert est.global_batch == 8  # profile batch 1 per device × 8


def test_ddp_across_nodes_uses_the_network():
    est = estimate(toy_profile(), toy_catalog(), node(nodes=2))
    # 0.14001 inside + 0.16001 over the network at 0.5 × 50 GB/s, minus backward 0.04001
    assert est.comm.inter_s == pytest.approx(0.16001, rel=REL) and est.comm.bound == "toynet"
    assert est.comm.exposed_s == pytest.approx(0.30002 - BWD, rel=REL)


def test_a_small_all_reduce_still_exposes_its_last_bucket():
    tiny = toy_profile(parameters=1_000_000, trainable_parameters=1_000_000)  # 4 MB of gradients
    est = estimate(tiny, toy_catalog(), node())
    assert est.comm.exposed_s == pytest.approx(10e-6 + 1.75 * 4e6 / 50e9, rel=REL)  # all of it: one bucket


def test_fsdp_step_overlaps_per_pass_and_shards_the_optimizer():
    est = estimate(toy_profile(), toy_catalog(), node(strategy="fsdp"))
    gather = 10e-6 + 7 / 8 * 2e9 / 50e9  # bf16 weights: 0.03501
    scatter = 10e-6 + 7 / 8 * 4e9 / 50e9  # fp32 grads: 0.07001
    exposed = (gather - FWD) + (gather + scatter - BWD)  # 0.00996 + 0.06501
    assert est.comm.exposed_s == pytest.approx(exposed, rel=REL)
    assert est.comm.total_s == pytest.approx(2 * gather + scatter, rel=REL)
    assert est.step_time_s == pytest.approx(FWD + BWD + OPT / 8 + exposed, rel=REL)


def test_gradient_accumulation_when_the_global_batch_does_not_fit():
    # 8 devices, global 320 -> 40 per device; DDP memory 16 + 4 (buckets) + 11 + 2b GB ≤ 100 -> b ≤ 34,
    # so 2 accumulation steps, evened out to micro-batch 20
    est = estimate(toy_profile(), toy_catalog(), node(global_batch=320))
    assert (est.micro_batch, est.accumulation, est.global_batch) == (20, 2, 320)
    fwd, bwd = est.phases["forward"].seconds, est.phases["backward"].seconds
    assert est.step_time_s == pytest.approx(2 * (fwd + bwd) + OPT + est.comm.exposed_s, rel=REL)
    odd = estimate(toy_profile(), toy_catalog(), node(global_batch=12))  # 1.5 per device -> 2: padded to 16
    assert odd.global_batch == 16 and any("runs as 16" in a for a in odd.assumptions)


def test_a_micro_batch_alone_sets_the_per_device_batch():
    est = estimate(toy_profile(), toy_catalog(), node(micro_batch=4))  # profile batch is 1
    assert (est.micro_batch, est.accumulation, est.global_batch) == (4, 1, 32)  # 4 × 1 × 8 devices


def test_checkpointing_adds_one_forward_pass_of_the_blocks():
    est = estimate(toy_profile(), toy_catalog(), single(checkpointing=True, micro_batch=1))
    blocks_fwd = 4 * (1e9 / (1e12 * 0.8)) + 4 * 10e-6  # the 4 gelu calls under 'layers.*': 0.00504 (not the head)
    assert est.step_time_s == pytest.approx(FWD + BWD + OPT + blocks_fwd, rel=REL)
    assert est.parts["recompute"] == pytest.approx(blocks_fwd, rel=REL)
    assert list(est.phases) == ["forward", "backward", "recompute", "optimizer"]
    assert est.memory.activation_bytes == pytest.approx(0.5e9)


def test_tokens_steps_and_cost_with_billing():
    wl = Workload(tokens=1e8)
    est = estimate(toy_profile(), toy_catalog(), node(), wl)
    assert est.steps == 12500  # 1e8 tokens / (8 samples × 1000 tokens)
    step = FWD + BWD + OPT + 0.1
    assert est.total_time_s == pytest.approx(12500 * step, rel=REL)  # 2313.4 s
    assert est.cost_usd == pytest.approx(10 * 2340 / 3600, rel=REL)  # rounded up to 39 whole minutes: $6.50
    spot = estimate(toy_profile(), toy_catalog(), node(spot=True, nodes=2), Workload(steps=10))
    assert spot.cost_usd == pytest.approx(4 * 2 * 600 / 3600)  # 10-minute minimum × 2 nodes × $4/h


def test_billing_granularity_and_minimum():
    inst = toy_instance()
    assert billed_cost(601, 10, 2, inst) == pytest.approx(10 * 2 * 660 / 3600)  # 11 whole minutes
    assert billed_cost(100, 10, 1, inst) == pytest.approx(10 * 600 / 3600)  # the 10-minute minimum
    chips = toy_instance(pricing={**inst.pricing.model_dump(), "per": "device", "on_demand_usd_per_hour": 1})
    assert chips.hourly_usd() == 8  # $1 per chip-hour × 8 chips


def test_samples_and_epochs_to_steps():
    prof = toy_profile()
    assert steps_for(prof, Workload(samples=1000, epochs=3), 64) == 47  # ceil(3000 / 64)
    assert steps_for(prof, Workload(steps=10), 64) == 10
    assert steps_for(prof, Workload(), 64) is None
    with pytest.raises(UserError) as err:
        steps_for(toy_profile(tokens_per_sample=None), Workload(tokens=1e9), 64)
    assert "no tokens per sample" in err.value.message


def test_cpu_instance_is_its_share_of_a_socket():
    cpu = toy_device(id="sock", kind="cpu", memory_bytes=None, cores=32, threads_per_core=2, device_link=None)
    half = scaled_device(cpu, 0.5)
    assert half.vector_flops.fp32 == 5e12 and half.memory_bandwidth == 5e11  # 10 TFLOPS, 1 TB/s × 0.5
    vm = toy_instance(id="vm", device="sock", device_count=0.5, fabric=None, host_memory_bytes="64 GB")
    cat = toy_catalog(devices=[cpu], instances=[vm])
    est = estimate(toy_profile(), cat, Config(device="sock", instance="vm"))
    assert est.phases["optimizer"].seconds == pytest.approx(16e9 / (0.5e12 * 0.8) + 10e-6, rel=REL)  # 0.04001
    assert est.memory.capacity_bytes == 64e9


def test_precision_the_device_lacks_and_missing_links():
    with pytest.raises(UserError) as err:
        check_precision(toy_device(matrix_flops={"fp16": "100 TFLOPS"}), "bf16-mixed")
    assert "cannot compute in bf16" in err.value.message and "fp16-mixed" in err.value.hint
    with pytest.raises(UserError) as err:
        estimate(toy_profile(), toy_catalog(), Config(device="toy", devices_per_node=2, nodes=2))
    assert "no network" in err.value.message


def test_contradictory_batches_are_user_errors():
    with pytest.raises(UserError) as err:
        estimate(toy_profile(), toy_catalog(), node(global_batch=4))
    assert "smaller than the 8 data-parallel replicas" in err.value.message
    with pytest.raises(UserError) as err:
        estimate(toy_profile(), toy_catalog(), node(global_batch=16, micro_batch=4))
    assert "contradictory batch" in err.value.message
    with pytest.raises(UserError) as err:
        Workload(steps=10, tokens=1e9)
    assert "contradictory workload" in err.value.message


def test_the_cache_gives_the_same_answer():
    cache: dict = {}
    first = estimate(toy_profile(), toy_catalog(), node(), cache=cache)
    again = estimate(toy_profile(), toy_catalog(), node(nodes=2), cache=cache)
    fresh = estimate(toy_profile(), toy_catalog(), node(nodes=2))
    assert again.step_time_s == fresh.step_time_s and first.step_time_s < again.step_time_s
    assert any(key[0] == "passes" for key in cache)  # the per-op passes are kept for the next configuration
