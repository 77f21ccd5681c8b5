"""Estimate every candidate, drop the infeasible ones with their reason, rank the rest, mark the Pareto front.

Ranking: with a deadline, the cheapest option that meets it; with a budget, the fastest within it; with
both, the options meeting both ordered by --objective (cost unless asked otherwise); with neither, by
--objective. Ties are broken by the other objective, then by fewer devices and the instance id, so the
order is reproducible. Every comparison is on numbers, never on formatted text.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from advisor import units
from advisor.catalog.schema import Catalog
from advisor.errors import UserError
from advisor.estimator.batch import resolve_global_batch, too_many_replicas
from advisor.estimator.config import Config, Workload
from advisor.estimator.estimate import billed_cost, estimate
from advisor.estimator.runtime import RunOptions
from advisor.recommender.candidates import Candidate, enumerate_candidates, is_owned
from advisor.recommender.explain import explain
from advisor.recommender.fastpath import too_big
from advisor.recommender.model import Constraints, Option, Question, Recommendation, Rejections, Row

if TYPE_CHECKING:
    from advisor.profiler.schema import Profile


def sort_key(option: Option, objective: str) -> tuple:
    first, second = (
        (option.cost_usd, option.total_time_s) if objective == "cost" else (option.total_time_s, option.cost_usd)
    )
    return (first, second, option.devices, option.instance, option.precision, option.strategy, option.pricing)


def mark_pareto(options: list[Option]) -> list[Option]:
    """Flag and return the options no other option beats on both total time and cost (ties: the first)."""
    front: list[Option] = []
    best_cost = float("inf")
    for option in sorted(options, key=lambda o: (o.total_time_s, o.cost_usd, o.devices, o.instance)):
        if option.cost_usd < best_cost:
            option.pareto = True
            front.append(option)
            best_cost = option.cost_usd
    return front


def _row(cand: Candidate, est, pricing: str, hourly: float, cost: float, constraints: Constraints, owned: bool) -> Row:
    m = est.memory
    inst = cand.instance
    run = est.run
    return Row(
        rank=None,
        provider=inst.provider,
        instance=inst.id,
        instance_name=inst.name,
        region=inst.pricing.regions[0],
        device=cand.device.id,
        device_kind=cand.device.kind,
        nodes=cand.nodes,
        devices_per_node=cand.per_node,
        devices=cand.world,
        precision=cand.precision,
        strategy=est.config.strategy,
        checkpointing=cand.checkpointing,
        pricing=pricing,
        step_time_s=est.step_time_s,
        total_time_s=est.total_time_s,
        startup_s=run.startup_s,
        checkpoint_s=run.checkpoint_s,
        eval_s=run.eval_s,
        input_bound=est.input is not None and est.input.wait_s > 0,
        owned=owned,
        price_as_of=inst.as_of.isoformat(),
        cost_usd=cost,
        usd_per_hour=hourly * cand.nodes,
        steps=est.steps,
        micro_batch=est.micro_batch,
        accumulation=est.accumulation,
        global_batch=est.global_batch,
        global_batch_reason=est.global_batch_reason,
        mfu=est.mfu,
        memory_bytes=m.total_bytes,
        memory_capacity_bytes=m.capacity_bytes,
        memory_headroom_bytes=m.headroom_bytes,
        error_band=est.error_band,
        pareto=False,
        meets_deadline=constraints.deadline_s is None or est.total_time_s <= constraints.deadline_s,
        within_budget=constraints.budget_usd is None or cost <= constraints.budget_usd,
    )


def check_workload(profile: Profile, workload: Workload) -> None:
    if workload.empty():
        raise UserError(
            "recommend needs a workload: how much training",
            "give --samples N --epochs E, --steps S or --tokens T",
        )
    if workload.tokens is not None and not profile.tokens_per_sample:
        raise UserError(
            f"profile {profile.name} has no tokens per sample, so --tokens cannot be turned into steps",
            "give --samples and --epochs, or --steps",
        )


def evaluate(profile: Profile, catalog: Catalog, workload: Workload, constraints: Constraints):
    """(feasible options, rejections, candidates estimated, assumptions by device, closest memory miss).

    Every candidate (configuration × pricing) ends up either feasible or counted once under one reason."""
    rejections = Rejections()
    pricings = ["on-demand", "spot"] if constraints.pricing == "both" else [constraints.pricing]
    weight = len(pricings)

    def rejected(reason: str, example: str, configurations: int = 1) -> None:
        rejections.add(reason, example, n=configurations * weight)

    gb = resolve_global_batch(profile, constraints.global_batch)
    run = RunOptions(checkpoint_every_s=constraints.checkpoint_every_s, eval_share=constraints.eval_share)
    cache: dict = {}
    fits: dict = {}
    feasible: list[Row] = []
    notes: dict[str, dict[str, None]] = {}
    estimated = 0
    closest = None  # the memory-rejected configuration that came nearest to fitting
    for cand in enumerate_candidates(
        catalog,
        constraints.precisions or None,
        constraints.max_devices,
        rejected,
        constraints.providers,
        constraints.devices,
    ):
        if too_many_replicas(gb.samples, cand.world):
            rejected(
                "more replicas than the global batch", f"{cand.label()}: {cand.world} devices, {gb.samples} samples"
            )
            continue
        config = Config(
            device=cand.device.id,
            instance=cand.instance.id,
            devices_per_node=cand.per_node,
            nodes=cand.nodes,
            precision=cand.precision,
            strategy=cand.strategy,
            checkpointing=cand.checkpointing,
            global_batch=gb.samples,
        )
        try:
            eff = catalog.efficiency[cand.device.efficiency]
            overflow = too_big(profile, config, cand.device, eff, fits)
            est = None if overflow is not None else estimate(profile, catalog, config, workload, cache, run)
        except (UserError, ValueError) as exc:
            rejected("cannot estimate", f"{cand.label()}: {exc}")
            continue
        mem = overflow or est.memory
        if est is not None:
            estimated += 1
            seen = notes.setdefault(cand.device.id, {})
            for line in est.assumptions:
                seen.setdefault(line, None)
        if not mem.fits:
            over = mem.total_bytes / mem.capacity_bytes if mem.capacity_bytes else float("inf")
            if closest is None or over < closest[0]:
                closest = (over, cand.label(), mem.total_bytes, mem.capacity_bytes)
            rejected(
                "memory",
                f"{cand.label()}: needs {units.fmt_bytes(mem.total_bytes)} per device of "
                f"{units.fmt_bytes(mem.capacity_bytes or 0)}",
            )
            continue
        for pricing in pricings:
            spot = pricing == "spot"
            hourly = cand.instance.hourly_usd(spot=spot)
            if hourly is None:
                rejections.add(f"no {pricing} price", cand.instance.id)
                continue
            cost = est.cost_usd if not spot and est.cost_usd is not None else None
            if cost is None:
                cost = billed_cost(est.total_time_s, hourly, cand.nodes, cand.instance)
            feasible.append(_row(cand, est, pricing, hourly, cost, constraints, is_owned(catalog, cand.instance)))
    return feasible, rejections, estimated, notes, closest


def recommend(
    profile: Profile, catalog: Catalog, workload: Workload, constraints: Constraints, top: int = 10
) -> Recommendation:
    """Rank every configuration in `catalog` for training `profile` on `workload` under `constraints`."""
    start = time.perf_counter()
    check_workload(profile, workload)
    if top < 1:
        raise UserError(f"--top must be at least 1, got {top}")
    feasible, rejections, estimated, notes, closest = evaluate(profile, catalog, workload, constraints)
    front = mark_pareto(feasible)
    qualifying = []
    for option in feasible:
        if option.meets_deadline and option.within_budget:
            qualifying.append(option)
        elif not option.meets_deadline and not option.within_budget:
            rejections.add("deadline and budget", option.label())
        else:
            rejections.add("deadline" if not option.meets_deadline else "budget", option.label())
    qualifying.sort(key=lambda o: sort_key(o, constraints.objective))
    for i, option in enumerate(qualifying, 1):
        option.rank = i
    shown = [row.to_option() for row in qualifying[:top]]
    front = [row.to_option() for row in front]
    explanation = None if qualifying else explain(feasible, constraints, rejections, closest)
    devices = {o.device for o in (*shown, *front)}
    if explanation:
        devices |= {o.device for o in (explanation.fastest, explanation.cheapest) if o is not None}
    assumptions = list(dict.fromkeys(line for d in sorted(devices) for line in notes.get(d, {})))
    oldest, newest = catalog.as_of_range()
    gb = resolve_global_batch(profile, constraints.global_batch)
    return Recommendation(
        question=Question(
            profile=profile.name,
            global_batch=gb.samples,
            global_batch_source=gb.source,
            global_batch_detail=gb.detail,
            profile_sha256=profile.model_sha256,
            parameters=profile.parameters,
            workload=workload.model_dump(exclude_none=True),
            workload_text=workload.describe(),
            constraints=constraints,
        ),
        catalog_as_of={"oldest": oldest.isoformat(), "newest": newest.isoformat()},
        catalog_overrides=list(catalog.overrides),
        assumptions=assumptions,
        candidates=rejections.total() + len(qualifying),
        estimated=estimated,
        qualifying=len(qualifying),
        options=shown,
        pareto=sorted(front, key=lambda o: o.total_time_s),
        rejections=rejections,
        explanation=explanation,
        elapsed_s=time.perf_counter() - start,
        feasible=feasible,
    )
