"""The answers a practitioner would sign off on, on the shipped catalog and profiles: rentable machines, the
recipe's global batch, start-up and checkpoints included, owned machines only when asked, no inference chips."""

from __future__ import annotations

import pytest

from advisor import api
from advisor.recommender.candidates import OWNED
from advisor.recommender.model import Constraints

DAY = 86400


@pytest.fixture(scope="module")
def gpt2():
    prof = api.profile_from("gpt2_124m")
    return api.recommend(prof, tokens=10e9, constraints=Constraints(deadline_s=3 * DAY), top=10)


def test_gpt2_on_10b_tokens_in_3_days_is_one_node_for_hours(gpt2):
    best = gpt2.options[0]
    # llm.c's GPT-2 124M reproduction trained 10B tokens on one 8 x A100 node in about 90 minutes
    assert best.nodes == 1 and best.devices <= 8 and not best.owned and best.provider != "onprem"
    assert 3600 <= best.total_time_s <= 3 * DAY
    # nothing in the top 10 rents a cluster: at most one option spans two nodes, none more. GPT-2's 50,257-word
    # head runs on cuBLAS's slow unaligned kernels on NVIDIA GPUs (advisor: about 1.3-1.4x the step of a padded
    # 50,304, the reason nanoGPT and llm.c pad it), not on a TPU, whose compiler pads it, so two v6e-8 (16 chips,
    # under an hour, 8 % dearer than one v6e-8 in 1.7 h) now rank ninth
    assert all(o.nodes <= 2 for o in gpt2.options) and sum(o.nodes == 2 for o in gpt2.options) <= 1


def test_every_option_trains_at_the_recipes_global_batch(gpt2):
    q = gpt2.question
    assert (q.global_batch, q.global_batch_source) == (512, "the model file's GLOBAL_BATCH")
    # 512 = 2^9 and every device count here is a power of two up to 512: always an exact factorization
    assert all(o.global_batch == 512 and o.global_batch_reason is None for o in gpt2.options + gpt2.pareto)
    assert all(o.micro_batch * o.accumulation * o.dp == 512 for o in gpt2.options)


def test_start_up_checkpoints_and_evaluation_are_in_every_total(gpt2):
    for o in gpt2.options:
        assert o.startup_s >= 60 and o.checkpoint_s > 0 and o.eval_s > 0  # at least the framework's start
        assert o.total_time_s > o.startup_s + o.checkpoint_s + o.eval_s
    # the fastest cluster pays its start-up on every node: the Pareto front's fastest is not minutes for dollars
    fastest = gpt2.pareto[0]
    assert fastest.total_time_s > fastest.startup_s and fastest.cost_usd > 10 * gpt2.options[0].cost_usd


def test_owned_machines_and_inference_chips_are_not_rented(gpt2):
    counts = gpt2.rejections.counts
    assert counts[OWNED] > 0 and counts["inference-only device"] > 0
    assert not any(o.owned or o.device == "inferentia2" for o in gpt2.options + gpt2.pareto)


def test_owned_machines_when_asked_are_labelled():
    prof = api.profile_from("gpt2_124m")
    rec = api.recommend(prof, tokens=10e9, constraints=Constraints(deadline_s=3 * DAY, providers=["onprem"]), top=3)
    assert rec.options and all(o.owned and o.provider == "onprem" for o in rec.options)


def test_more_replicas_than_the_global_batch_are_not_candidates():
    prof = api.profile_from("lstm")  # GLOBAL_BATCH 20 sequences (Zaremba et al.)
    rec = api.recommend(prof, tokens=1e8, constraints=Constraints(), top=5)
    assert rec.rejections.counts["more replicas than the global batch"] > 0
    assert all(o.devices <= 20 for o in rec.feasible)


def test_the_resnet_comparison_is_rentable_and_at_the_recipe_batch():
    prof = api.profile_from("resnet50")
    result = api.compare(prof, samples=1.28e6, epochs=90)
    assert result.question.global_batch == 256
    for row in result.rows:
        if row.best is not None:
            assert not row.best.owned and row.best.global_batch == 256 and row.best.device != "inferentia2"
    assert result.winner == "gpu"
