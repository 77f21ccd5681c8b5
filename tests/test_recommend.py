"""Recommender on a hand-checkable world: two one-device instances, one profile whose step is 3 s at 1 TFLOP/s.

gpu-a: 1 TFLOP/s bf16, on inst-a at $3.60/h. gpu-b: 2 TFLOP/s bf16, on inst-b at $9.00/h.
Profile: forward 1e12 FLOPs and backward 2e12 FLOPs per sample, batch 1, negligible bytes; efficiency 1.0,
per-op overhead 1 ns. So one step takes 3 s on gpu-a and 1.5 s on gpu-b (plus 2 ns), and 1,000 steps take
3,000 s ($3.60/h × 3,000 s = $3.00) and 1,500 s ($9.00/h × 1,500 s = $3.75). Nothing in the profile repeats, so
each one-device instance has a single layout (no parallelism, no recomputation): 2 candidates per pricing.
"""

from __future__ import annotations

import datetime as dt

import pytest
import yaml

from advisor.catalog.schema import Catalog, Device, Efficiency, Instance
from advisor.errors import UserError
from advisor.estimator.config import Workload
from advisor.profiler.schema import Profile
from advisor.recommender.model import Constraints
from advisor.recommender.rank import mark_pareto, recommend

EFFICIENCY = {
    "id": "test-eff",
    "note": "ideal efficiency for hand-checked tests",
    "matrix": [{"min_size": 0, "efficiency": 1.0}],
    "vector": 1.0,
    "memory": [{"min_size": 0, "efficiency": 1.0}],
    "op_overhead_s": "1 ns",
    "device_link": 1.0,
    "network": 1.0,
    "collective_latency_s": "1 ns",
}


def device(dev_id: str, tflops: float, memory: str = "10 GB") -> dict:
    return {
        "id": dev_id,
        "name": f"Test {dev_id}",
        "vendor": "test",
        "kind": "gpu",
        "software_stack": "cuda",
        "efficiency": "test-eff",
        "memory_bytes": memory,
        "memory_bandwidth": "1 TB/s",
        "matrix_flops": {"bf16": tflops * 1e12, "fp32": tflops * 1e12 / 4},
        "vector_flops": {"fp32": 1e11},
        "tdp_watts": 300,
        "launch_year": 2024,
        "source": "hand-made test device",
        "as_of": "2026-01-01",
    }


def instance(inst_id: str, dev_id: str, usd_per_hour: float, spot: float | None = None) -> dict:
    pricing = {"on_demand_usd_per_hour": usd_per_hour, "regions": ["test-1"]}
    if spot is not None:
        pricing["spot_usd_per_hour"] = spot
    return {
        "id": inst_id,
        "provider": "testcloud",
        "name": inst_id,
        "device": dev_id,
        "device_count": 1,
        "pricing": pricing,
        "source": "hand-made test instance",
        "as_of": "2026-01-01",
    }


def world_data(spot_b: float | None = None) -> dict:
    return {
        "devices": [device("gpu-a", 1.0), device("gpu-b", 2.0)],
        "efficiency": [EFFICIENCY],
        "instances": [instance("inst-a", "gpu-a", 3.6), instance("inst-b", "gpu-b", 9.0, spot_b)],
    }


def tiny_catalog(spot_b: float | None = None) -> Catalog:
    data = world_data(spot_b)
    return Catalog(
        devices={d["id"]: Device(**d) for d in data["devices"]},
        efficiency={e["id"]: Efficiency(**e) for e in data["efficiency"]},
        instances={i["id"]: Instance(**i) for i in data["instances"]},
    )


def _op(phase: str, flops: float) -> dict:
    lin = {"fixed": 0.0, "per_sample": flops}
    tiny = {"fixed": 0.0, "per_sample": 1.0}
    return {
        "op": "aten.mm",
        "phase": phase,
        "category": "matrix",
        "dtype": "bf16",
        "module": "layer",
        "count": 1,
        "flops": lin,
        "bytes_read": tiny,
        "bytes_written": tiny,
    }


def profile_data(activation_per_sample: float = 1e6) -> dict:
    lin = {"fixed": 0.0, "per_sample": activation_per_sample}
    return {
        "name": "tiny",
        "model_file": "tiny.py",
        "model_sha256": "ab" * 32,
        "created": "2026-01-01T00:00:00+00:00",
        "advisor_version": "0",
        "torch_version": "0",
        "device": "meta",
        "precision": "bf16-mixed",
        "optimizer": "adamw",
        "profiled_batch_sizes": [1, 2],
        "batch_size": 1,
        "input_shapes": ["[1, 8] int64"],
        "tokens_per_sample": 8,
        "linear_in_batch": True,
        "parameters": 1_000_000,
        "trainable_parameters": 1_000_000,
        "memory": {
            "parameter_bytes": 4e6,
            "gradient_bytes": 4e6,
            "optimizer_state_bytes": 8e6,
            "activation_bytes": lin,
            "checkpoint_bytes": lin,
            "temporary_peak_bytes": {"fixed": 0.0, "per_sample": 0.0},
            "peak_bytes": lin,
        },
        "ops": [_op("forward", 1e12), _op("backward", 2e12)],
    }


def tiny_profile(**kw) -> Profile:
    return Profile.model_validate(profile_data(**kw))


# On disk the world is an overlay on the shipped catalog, whose run costs (start-up, evaluation, checkpoints)
# would add to every hand-derived time: the overlay switches them off (tests/test_runtime.py covers them).
NO_RUN_COSTS = {
    "providers": [
        {"id": "testcloud", "name": "Test cloud", "provisioning_s": "0s", "setup_s": "0s",
         "source": "hand-made test provider", "as_of": "2026-01-01"}
    ],
    "runtime": [
        {"id": "default", "framework_init_s": "0s", "collective_init_s_per_node": "0s", "eval_share": 0.0,
         "checkpoint_bandwidth": "1 PB/s"}
    ],
}  # fmt: skip


def write_world(tmp_path, spot_b: float | None = None):
    """The same world on disk: a catalog overlay and a profile, for the CLI."""
    overlay = tmp_path / "world.yaml"
    overlay.write_text(yaml.safe_dump({**world_data(spot_b), **NO_RUN_COSTS}))
    prof = tmp_path / "tiny.yaml"
    prof.write_text(yaml.safe_dump({"schema_version": 1, **profile_data()}))
    return overlay, prof


def run(constraints: Constraints, spot_b: float | None = None, **kw):
    c = constraints.model_copy(update={"precisions": ["bf16-mixed"]})
    return recommend(tiny_profile(), tiny_catalog(spot_b), Workload(steps=1000), c, **kw)


def test_deadline_picks_the_cheapest_that_meets_it():
    rec = run(Constraints(deadline_s=3600))
    # both meet 1 h: inst-a 3,000 s for $3.00 beats inst-b 1,500 s for $3.75
    best = rec.options[0]
    assert best.instance == "inst-a"
    assert best.total_time_s == pytest.approx(3000, rel=1e-6)  # 1,000 × (1 + 2) s
    assert best.cost_usd == pytest.approx(3.00, rel=1e-3)  # 3.60 $/h × 3,000 s (billed by the second)
    assert [o.instance for o in rec.options[:2]] == ["inst-a", "inst-b"]
    assert rec.options[1].cost_usd == pytest.approx(3.75, rel=1e-3)  # 9.00 $/h × 1,500 s
    # 2 instances × one layout = 2 candidates, both qualify
    assert rec.candidates == 2 and rec.qualifying == 2
    assert rec.rejections.counts == {}
    assert [o.cost_usd for o in rec.options] == sorted(o.cost_usd for o in rec.options)


def test_tight_deadline_leaves_only_the_fast_one():
    rec = run(Constraints(deadline_s=2000))
    # inst-a needs 3,000 s; inst-b 1,500 s qualifies
    assert [o.instance for o in rec.options] == ["inst-b"]
    assert rec.rejections.counts == {"deadline": 1}


def test_budget_picks_the_fastest_within_it():
    rec = run(Constraints(budget_usd=3.5, objective="time"))
    # within $3.50: inst-a ($3.00, 3,000 s); inst-b costs $3.75
    assert rec.options[0].instance == "inst-a"
    assert not rec.options[0].checkpointing
    rec = run(Constraints(budget_usd=10, objective="time"))
    assert rec.options[0].instance == "inst-b"  # the fastest, 1,500 s, once the budget allows it


def test_ties_are_broken_by_the_other_objective():
    from advisor.recommender.rank import sort_key

    base = run(Constraints()).options[0]
    slow = base.model_copy(update={"total_time_s": 200.0, "cost_usd": 5.0, "instance": "a"})
    fast = base.model_copy(update={"total_time_s": 100.0, "cost_usd": 5.0, "instance": "b"})
    dear = base.model_copy(update={"total_time_s": 100.0, "cost_usd": 9.0, "instance": "c"})
    # equal cost: the faster first, whatever the instance name says
    assert sorted([slow, fast], key=lambda o: sort_key(o, "cost"))[0].instance == "b"
    # equal time: the cheaper first
    assert sorted([dear, fast], key=lambda o: sort_key(o, "time"))[0].instance == "b"
    # numbers, not text: $10 sorts after $9 (as strings '$10' < '$9')
    ten = base.model_copy(update={"cost_usd": 10.0, "instance": "d"})
    assert [o.instance for o in sorted([ten, dear], key=lambda o: sort_key(o, "cost"))] == ["c", "d"]


def test_spot_pricing_both():
    # spot inst-b at $4.50/h: 1,500 s cost $1.875, cheaper than anything on demand
    rec = run(Constraints(pricing="both"), spot_b=4.5)
    first = rec.options[0]
    assert (first.instance, first.pricing) == ("inst-b", "spot")
    assert first.cost_usd == pytest.approx(1.875, rel=1e-3)
    # inst-a has no spot price: its configuration is rejected for that; 2 instances × 2 pricings = 4 candidates
    assert rec.rejections.counts["no spot price"] == 1
    assert rec.candidates == 4


def test_pareto_front_excludes_dominated_options():
    rec = run(Constraints())
    front = {(o.instance, o.checkpointing) for o in rec.pareto}
    # (3,000 s, $3.00) and (1,500 s, $3.75) trade off
    assert front == {("inst-a", False), ("inst-b", False)}


def test_mark_pareto_on_plain_numbers():
    from advisor.recommender.model import Option

    def opt(t, c):
        base = run(Constraints()).options[0].model_copy()
        return base.model_copy(update={"total_time_s": t, "cost_usd": c, "pareto": False})

    options = [opt(1, 10), opt(2, 5), opt(3, 6), opt(4, 1), opt(2, 5)]
    front = mark_pareto(options)
    assert [(o.total_time_s, o.cost_usd) for o in front] == [(1, 10), (2, 5), (4, 1)]  # (3, 6) loses to (2, 5)
    assert isinstance(front[0], Option)


def test_nothing_qualifies_explains_both_constraints():
    rec = run(Constraints(deadline_s=2000, budget_usd=3.5))
    assert rec.options == [] and rec.qualifying == 0
    e = rec.explanation
    # inst-b meets the deadline but costs $3.75; inst-a is within budget but takes 3,000 s
    assert e.binding == ["deadline and budget together"]
    assert e.fastest.instance == "inst-b" and e.cheapest.instance == "inst-a"
    assert e.fastest.total_time_s == pytest.approx(1500, rel=1e-6)
    assert e.cheapest.cost_usd == pytest.approx(3.0, rel=1e-3)
    text = " ".join(e.relax)
    assert "raise --budget to $3.75" in text
    assert "extend --deadline to 50 min" in text  # 3,000 s
    # every candidate is counted once: 2 configurations
    assert rec.rejections.total() == 2


def test_nothing_qualifies_deadline_binds():
    rec = run(Constraints(deadline_s=600))
    assert rec.explanation.binding == ["deadline"]
    assert "extend --deadline to at least 25 min" in rec.explanation.relax[0]  # fastest: 1,500 s


def test_nothing_fits_in_memory_says_so():
    prof = tiny_profile(activation_per_sample=50e9)  # 50 GB of activations per sample, devices hold 10 GB
    c = Constraints(precisions=["bf16-mixed"])
    rec = recommend(prof, tiny_catalog(), Workload(steps=10), c)
    assert rec.explanation.binding == ["memory"]
    assert rec.rejections.counts == {"memory": 2}
    assert "closest to fitting" in rec.explanation.relax[0]


def test_filters_record_rejections_and_suggest_spellings():
    from advisor.recommender.candidates import resolve_devices, resolve_providers

    cat = tiny_catalog()
    assert resolve_devices(cat, ["gpu-b"]) == ["gpu-b"]
    assert resolve_devices(cat, ["gpu"]) == ["gpu-a", "gpu-b"]  # a kind
    with pytest.raises(UserError) as err:
        resolve_devices(cat, ["gpu-c"])
    assert "unknown device 'gpu-c'" in err.value.line() and "did you mean" in err.value.line()
    with pytest.raises(UserError) as err:
        resolve_providers(cat, ["testclod"])
    assert "did you mean: testcloud" in err.value.line()
    rec = run(Constraints(devices=["gpu-b"]))
    assert {o.instance for o in rec.options} == {"inst-b"}
    assert rec.rejections.counts == {"device filter": 1}  # inst-a's one configuration (1 node × 1 precision)


def test_workload_is_required():
    with pytest.raises(UserError) as err:
        recommend(tiny_profile(), tiny_catalog(), Workload(), Constraints())
    assert "needs a workload" in err.value.line()


def test_export_dates_come_from_the_catalog():
    rec = run(Constraints())
    assert rec.catalog_as_of == {"oldest": "2026-01-01", "newest": "2026-01-01"}
    assert rec.question.profile_sha256 == "ab" * 32
    assert dt.date.fromisoformat(rec.catalog_as_of["oldest"])


def test_memory_verdict_agrees_with_estimate():
    from advisor.estimator.config import Config
    from advisor.estimator.estimate import estimate

    cat = tiny_catalog()
    config = Config(device="gpu-a", instance="inst-a", precision="bf16-mixed")
    for per_sample, fits in ((50e9, False), (1e6, True)):  # 50 GB of activations on a 10 GB device; 1 MB
        prof = tiny_profile(activation_per_sample=per_sample)
        rec = recommend(prof, cat, Workload(steps=1), Constraints(precisions=["bf16-mixed"], devices=["gpu-a"]))
        assert (rec.qualifying == 1) == fits == estimate(prof, cat, config, Workload(steps=1)).memory.fits


def test_unsupported_precision_is_a_recorded_rejection():
    # the test devices compute bf16 and fp32 on their matrix units, not fp16
    rec = recommend(tiny_profile(), tiny_catalog(), Workload(steps=10), Constraints(precisions=["fp16-mixed"]))
    assert rec.rejections.counts == {"precision unsupported": 2}  # 2 instances × 1 node count
    assert rec.explanation.binding == ["filters"]
    assert "allow other precisions (--precision)" in rec.explanation.relax


def test_default_precisions_skip_duplicates():
    from advisor.recommender.candidates import default_precisions

    cat = tiny_catalog()
    # no tf32 on the test device; bf16 present, so fp16-mixed (same rate) is not tried as well
    assert default_precisions(cat.devices["gpu-a"]) == ["fp32", "bf16-mixed"]


def test_a_global_batch_past_4096_is_one_micro_batch_where_it_fits():
    """A small model at a recommender's global batch of 2^20 trains it as one micro-batch when memory allows:
    the search's micro-batches are not capped at 4,096 (there 256 micro-batches of 4,096 each paid a launch-bound
    step, and a micro-batch of exactly 4,096 overflowed the search's packed index: an IndexError)."""
    prof = Profile.model_validate(profile_data(activation_per_sample=1e3))  # 1 KB a sample: 2^20 is 1 GB
    c = Constraints(precisions=["bf16-mixed"], global_batch=1 << 20)
    rec = recommend(prof, tiny_catalog(), Workload(steps=1), c)
    best = rec.options[0]
    assert (best.micro_batch, best.accumulation, best.global_batch) == (1 << 20, 1, 1 << 20)
    # one step of 2^20 samples at (1e12 + 2e12) FLOPs each: 3,145,728 s on gpu-a (1 TFLOP/s)
    assert best.instance == "inst-a" and best.total_time_s == pytest.approx(3_145_728, rel=1e-6)
