"""Recommender: candidate enumeration, filters that record rejections, ranking, Pareto front, comparison.

    from advisor import api
    from advisor.estimator.config import Workload
    from advisor.recommender import Constraints, recommend
    rec = recommend(api.profile_from("gpt2_124m"), api.catalog(), Workload(tokens=10e9),
                    Constraints(deadline_s=3 * 86400))
    rec.options[0].instance, rec.options[0].cost_usd

`advisor.recommender.compare.compare` answers 'CPU, GPU or TPU?'.
Submodules are imported lazily so that `import advisor.recommender` stays cheap.
"""

from __future__ import annotations


def __getattr__(name: str):
    if name in ("recommend", "sort_key", "mark_pareto"):
        from advisor.recommender import rank

        return getattr(rank, name)
    if name in ("Constraints", "Option", "Recommendation", "Explanation", "Rejections"):
        from advisor.recommender import model

        return getattr(model, name)
    raise AttributeError(name)
