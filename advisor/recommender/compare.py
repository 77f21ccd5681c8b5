"""'Do I need a GPU?': the best CPU, GPU, TPU and other-accelerator options side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from advisor import units
from advisor.catalog.schema import Catalog
from advisor.estimator.config import Workload
from advisor.recommender.model import Constraints, Option, Question
from advisor.recommender.rank import recommend, sort_key
from advisor.vocab import DEVICE_KINDS

if TYPE_CHECKING:
    from advisor.profiler.schema import Profile


class KindRow(BaseModel):
    kind: str
    best: Option | None = None
    fastest: Option | None = None
    options: int = 0
    note: str = ""


class Comparison(BaseModel):
    question: Question
    rows: list[KindRow]
    winner: str | None = Field(None, description="the device kind whose best option wins under the objective")
    verdict: str = ""
    catalog_as_of: dict[str, str]
    assumptions: list[str] = []


def _verdict(rows: list[KindRow], objective: str) -> tuple[str | None, str]:
    """The winning kind and one sentence comparing every other kind's best option with it."""
    ranked = [r for r in rows if r.best is not None and not r.note]
    if not ranked:
        return None, "no kind has an option that meets the constraints"
    win = min(ranked, key=lambda r: sort_key(r.best, objective))
    w = win.best
    parts = [
        f"{win.kind.upper()} wins on {objective}: {w.instance} ({w.nodes}×{w.devices_per_node} {w.device})"
        f"{' (owned, amortized)' if w.owned else ''}, "
        f"{units.fmt_duration(w.total_time_s)} for {units.fmt_money(w.cost_usd)}"
    ]
    for row in rows:
        if row is win or row.best is None:
            continue
        b = row.best
        parts.append(
            f"the best {row.kind.upper()} takes {b.total_time_s / w.total_time_s:.2g}× as long at "
            f"{b.cost_usd / w.cost_usd:.2g}× the cost"
        )
    return win.kind, "; ".join(parts)


def compare(profile: Profile, catalog: Catalog, workload: Workload, constraints: Constraints) -> Comparison:
    """Per device kind: the best option under the objective among those meeting the constraints (else the
    best regardless of them, with a note), and the fastest of that kind; then which kind wins."""
    rec = recommend(profile, catalog, workload, constraints, top=1)
    rows = []
    for kind in DEVICE_KINDS:
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
    winner, verdict = _verdict(rows, constraints.objective)
    return Comparison(
        question=rec.question,
        rows=rows,
        winner=winner,
        verdict=verdict,
        catalog_as_of=rec.catalog_as_of,
        assumptions=rec.assumptions,
    )
