"""The global batch: where it comes from (flag, model file, micro-batch, profiled batch) and how a configuration
splits it (micro-batch × accumulation × data-parallel replicas), against hand-derived factorizations."""

from __future__ import annotations

import pytest
from estimator_fixtures import toy_catalog, toy_profile

from advisor.errors import UserError
from advisor.estimator.batch import MICRO, MODEL_FILE, PROFILED, plan_batch, resolve_global_batch
from advisor.estimator.config import Config
from advisor.estimator.estimate import estimate


def test_an_exact_factorization_is_found_by_divisors():
    # 512 on 2 replicas: 256 each; the largest divisor of 256 that fits (≤ 20) is 16 -> 16 × 16 × 2 = 512,
    # not ceil-division's 20 × 13 × 2 = 520
    plan = plan_batch(512, 2, 20)
    assert (plan.micro_batch, plan.accumulation, plan.data_parallel) == (16, 16, 2)
    assert plan.global_batch == 512 and plan.exact and plan.reason is None
    assert (plan_batch(512, 2, 300).micro_batch, plan_batch(512, 2, 300).accumulation) == (256, 1)
    # 96 on 3 replicas: 32 each; at most 10 fit -> 8 × 4 × 3 = 96
    assert (plan_batch(96, 3, 10).micro_batch, plan_batch(96, 3, 10).accumulation) == (8, 4)


def test_the_nearest_when_no_factorization_is_exact():
    plan = plan_batch(12, 8, 34)  # 1.5 per replica: 8 (1 each) and 16 (2 each) are both 4 away; round up
    assert plan.global_batch == 16 and not plan.exact and "nearest is 16" in plan.reason
    plan = plan_batch(520, 3, 20)  # 173.3 per replica: 173 × 3 = 519 (1 away) beats 174 × 3 = 522
    assert plan.global_batch == 519 and (plan.micro_batch, plan.accumulation) == (1, 173)  # 173 is prime
    fixed = plan_batch(100, 3, 0, micro=4)  # 4 × 3 = 12 per accumulation step: 8 steps -> 96 (100/12 = 8.3)
    assert (fixed.micro_batch, fixed.accumulation, fixed.global_batch) == (4, 8, 96)
    assert "does not divide 100" in fixed.reason


def test_more_replicas_than_samples_is_refused():
    with pytest.raises(UserError) as err:
        plan_batch(4, 8, 1)
    assert "smaller than the 8 data-parallel replicas" in err.value.message
    assert "--global-batch 8" in err.value.hint


def test_sources_in_order():
    prof = toy_profile()  # batch 1, no GLOBAL_BATCH
    assert resolve_global_batch(prof, 64).source == "--global-batch"
    recipe = toy_profile(global_batch=256, global_batch_source="a paper")
    gb = resolve_global_batch(recipe, None)
    assert (gb.samples, gb.source, gb.detail) == (256, MODEL_FILE, "a paper")
    assert resolve_global_batch(recipe, 64).samples == 64  # the flag wins
    micro = resolve_global_batch(prof, None, micro_batch=4, data_parallel=8)
    assert (micro.samples, micro.source) == (32, MICRO)  # 4 × 8
    fallback = resolve_global_batch(prof, None)
    assert (fallback.samples, fallback.source) == (1, PROFILED) and "GLOBAL_BATCH" in fallback.detail


def test_estimate_trains_at_the_recipe_batch_and_says_where_it_came_from():
    prof = toy_profile(global_batch=512, global_batch_source="a recipe")
    cfg = Config(device="toy", instance="toy-8x", devices_per_node=8, strategy="ddp")
    est = estimate(prof, toy_catalog(), cfg)
    # 512 / 8 = 64 per device; DDP memory 16 + 4 + 11 + 2b GB ≤ 100 -> b ≤ 34; largest divisor of 64 ≤ 34 is 32
    assert (est.micro_batch, est.accumulation, est.global_batch) == (32, 2, 512)
    assert est.global_batch_source == MODEL_FILE and est.global_batch_reason is None
    assert any("global batch 512 from the model file's GLOBAL_BATCH (a recipe)" in a for a in est.assumptions)
