"""The public Python API answers the same questions as the CLI."""

from __future__ import annotations

from advisor import api
from advisor.recommender.model import Constraints


def test_recommend_through_the_api_meets_the_deadline_and_ranks_by_cost():
    prof = api.profile_from("gpt2_124m")
    rec = api.recommend(prof, tokens=10e9, constraints=Constraints(deadline_s=3 * 86400, global_batch=512), top=5)
    assert rec.options and len(rec.options) <= 5
    assert all(o.total_time_s <= 3 * 86400 for o in rec.options)  # 3 days = 259,200 s
    costs = [o.cost_usd for o in rec.options]
    assert costs == sorted(costs)  # the cheapest first


def test_compare_through_the_api_has_a_row_per_kind():
    prof = api.profile_from("resnet50")
    cmp = api.compare(prof, samples=1.28e6, epochs=90)
    kinds = {row.kind for row in cmp.rows}
    assert {"cpu", "gpu", "tpu"} <= kinds
