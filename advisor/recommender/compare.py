"""'Do I need a GPU?': the best CPU, GPU, TPU and other-accelerator options side by side."""

from __future__ import annotations

from pydantic import BaseModel

from advisor.catalog.schema import Catalog
from advisor.estimator.config import Workload
from advisor.recommender.model import Constraints, Option, Question
from advisor.recommender.rank import recommend, sort_key

KINDS = ("cpu", "gpu", "tpu", "accelerator")


class KindRow(BaseModel):
    kind: str
    best: Option | None = None
    fastest: Option | None = None
    options: int = 0
    note: str = ""


class Comparison(BaseModel):
    question: Question
    rows: list[KindRow]
    catalog_as_of: dict[str, str]
    assumptions: list[str] = []


def compare(profile, catalog: Catalog, workload: Workload, constraints: Constraints) -> Comparison:
    """Per device kind: the best option under the objective among those meeting the constraints (else the
    one nearest to them), and the fastest of that kind."""
    rec = recommend(profile, catalog, workload, constraints, top=1)
    rows = []
    for kind in KINDS:
        group = [o for o in rec.feasible if o.device_kind == kind]
        if not group:
            present = any(catalog.devices[i.device].kind == kind for i in catalog.instances.values())
            why = "none fits in memory or passes the filters" if present else "none in the catalog"
            rows.append(KindRow(kind=kind, note=why))
            continue
        good = [o for o in group if o.meets_deadline and o.within_budget]
        pool = good or group
        best = min(pool, key=lambda o: sort_key(o, constraints.objective))
        fastest = min(group, key=lambda o: sort_key(o, "time"))
        note = "" if good else "none meets the constraints: the best regardless"
        rows.append(
            KindRow(kind=kind, best=best.to_option(), fastest=fastest.to_option(), options=len(group), note=note)
        )
    return Comparison(question=rec.question, rows=rows, catalog_as_of=rec.catalog_as_of, assumptions=rec.assumptions)
