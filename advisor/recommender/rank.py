"""Estimate every candidate, drop the infeasible ones with their reason, rank the rest, mark the Pareto front.

Each instance and precision is handed to the layout search (advisor/estimator/search.py), which evaluates
every valid parallel layout on each node count at once; for a given instance and node count the fastest
layout that fits is also the cheapest (the price is per node-hour), so it is the one option kept, and the
others are counted as rejected ("memory" for those that do not fit, "slower layout" for the rest).

Ranking: with a deadline, the cheapest option that meets it; with a budget, the fastest within it; with
both, the options meeting both ordered by --objective (cost unless asked otherwise); with neither, by
--objective. Ties are broken by the other objective, then by fewer devices and the instance id, so the
order is reproducible. Every comparison is on numbers, never on formatted text.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from advisor import units
from advisor.catalog.schema import Catalog
from advisor.errors import UserError
from advisor.estimator.bands import band_for, workload_kind
from advisor.estimator.batch import resolve_global_batch
from advisor.estimator.config import Config, Workload
from advisor.estimator.estimate import billed_cost, estimate, host_share, scaled_device, steps_for
from advisor.estimator.runtime import RunOptions, input_pipeline, run_costs, runtime_of
from advisor.estimator.search import Found, best, search_many
from advisor.estimator.setup import setup_for
from advisor.recommender.candidates import Candidate, enumerate_candidates, is_owned
from advisor.recommender.explain import explain
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


def _row(cand: Candidate, found: Found, i: int, layout, costs: dict, pricing: str, hourly: float, cost: float, cap,
         constraints: Constraints, owned: bool, band: float | None):  # fmt: skip
    nodes = int(found.nodes[i])
    inst = cand.instance
    total = costs["total_s"]
    memory = float(found.memory[i])
    return Row(
        rank=None,
        provider=inst.provider,
        instance=inst.id,
        instance_name=inst.name,
        region=inst.pricing.regions[0],
        device=cand.device.id,
        device_kind=cand.device.kind,
        nodes=nodes,
        devices_per_node=cand.per_node,
        devices=nodes * cand.per_node,
        precision=cand.precision,
        strategy=layout.strategy,
        checkpointing=layout.checkpointing,
        tp=layout.tp,
        pp=layout.pp,
        vpp=layout.vpp,
        cp=layout.cp,
        dp=layout.dp,
        sharding=layout.sharding,
        sequence_parallel=layout.sequence_parallel,
        recompute=layout.recompute,
        pricing=pricing,
        step_time_s=costs["step_s"],
        total_time_s=total,
        startup_s=costs["startup_s"],
        checkpoint_s=costs["checkpoint_s"],
        eval_s=costs["eval_s"],
        input_bound=costs["input_bound"],
        owned=owned,
        price_as_of=inst.as_of.isoformat(),
        cost_usd=cost,
        usd_per_hour=hourly * nodes,
        steps=costs["steps"],
        micro_batch=int(found.micro[i]),
        accumulation=int(found.m[i]),
        global_batch=int(found.micro[i] * found.m[i] * found.dp[i]),
        global_batch_reason=None,
        mfu=float(found.mfu[i]) * float(found.step[i]) / costs["step_s"],
        memory_bytes=memory,
        memory_capacity_bytes=cap,
        memory_headroom_bytes=None if cap is None else cap - memory,
        error_band=band,
        pareto=False,
        meets_deadline=constraints.deadline_s is None or total <= constraints.deadline_s,
        within_budget=constraints.budget_usd is None or cost <= constraints.budget_usd,
    )


def run_of(profile: Profile, catalog: Catalog, cand: Candidate, setup, found: Found, i: int, layout,
           workload: Workload, run: RunOptions) -> dict:  # fmt: skip
    """The whole run of one searched layout as estimate() prices it: the step plus what the host's input
    pipeline makes it wait, the steps, and start-up, evaluation and checkpoints (advisor/estimator/runtime.py)."""
    nodes = int(found.nodes[i])
    global_batch = int(found.micro[i] * found.m[i] * found.dp[i])
    config = Config(
        device=cand.device.id,
        instance=cand.instance.id,
        devices_per_node=cand.per_node,
        nodes=nodes,
        precision=cand.precision,
        layout=layout,
        micro_batch=int(found.micro[i]),
        global_batch=global_batch,
    )
    step = float(found.step[i])
    feed = input_pipeline(
        profile, runtime_of(catalog), setup.device, cand.instance, config, global_batch, step, run.loader_workers
    )
    wait = feed.wait_s if feed is not None else 0.0
    steps = steps_for(profile, workload, global_batch)
    costs = run_costs(profile, catalog, setup.device, cand.instance, config, steps * (step + wait), run)
    return {
        "step_s": step + wait,
        "steps": steps,
        "total_s": costs.total_s,
        "startup_s": costs.startup_s,
        "checkpoint_s": costs.checkpoint_s,
        "eval_s": costs.eval_s,
        "input_bound": wait > 0,
    }


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
    """(feasible options, rejections, layouts evaluated, closest memory miss).

    Every candidate (layout × pricing) ends up either feasible or counted once under one reason."""
    rejections = Rejections()
    pricings = ["on-demand", "spot"] if constraints.pricing == "both" else [constraints.pricing]
    weight = len(pricings)

    def rejected(reason: str, example: str, configurations: int = 1) -> None:
        rejections.add(reason, example, n=configurations * weight)

    gb = resolve_global_batch(profile, constraints.global_batch)
    run = run_options(constraints)
    cache: dict = {}
    cands: list[Candidate] = []
    setups, counts = [], []
    for cand in enumerate_candidates(
        catalog,
        constraints.precisions or None,
        constraints.max_devices,
        rejected,
        constraints.providers,
        constraints.devices,
    ):
        inst = cand.instance
        device = scaled_device(cand.device, host_share(cand.device, inst))
        try:
            eff = catalog.efficiency[device.efficiency]
            setups.append(setup_for(profile, device, eff, inst, cand.precision, cand.per_node, 1, cache))
        except (UserError, ValueError) as exc:
            rejected("cannot estimate", f"{cand.label()}: {exc}", len(cand.counts))
            continue
        cands.append(cand)
        counts.append([n for n in cand.counts if n == 1 or inst.network is not None])
    if not setups:
        return [], rejections, 0, None
    found = search_many(setups, counts, gb.samples, cache)
    kind = workload_kind(profile)
    winners = best(found)
    group = found.setup * (1 << 20) + found.nodes
    keys, index, sizes = np.unique(group, return_inverse=True, return_counts=True)
    fitting = np.bincount(index, weights=found.fits, minlength=len(keys)).astype(int)
    missing = np.where(found.fits, np.inf, found.memory)
    least = np.full(len(keys), np.inf)
    np.minimum.at(least, index, missing)
    where = {int(key): g for g, key in enumerate(keys)}
    closest = None
    bands: dict = {}  # error band by device
    feasible: list[Row] = []
    for k, (cand, setup) in enumerate(zip(cands, setups, strict=True)):
        owned = is_owned(catalog, cand.instance)
        for nodes in counts[k]:
            label = cand.label(nodes)
            g = where.get(k * (1 << 20) + nodes)
            if g is None:  # no layout of these devices divides the global batch, or the model's dimensions
                world = nodes * cand.per_node
                if world > gb.samples and setup.structure is None:
                    rejected("more replicas than the global batch", f"{label}: {world} devices, {gb.samples} samples")
                else:
                    rejected("no valid layout", f"{label}: global batch {gb.samples}")
                continue
            cap = setup.capacity
            if sizes[g] > fitting[g]:
                need = float(least[g])
                if (k, nodes) not in winners:
                    over = need / cap if cap else float("inf")
                    if closest is None or over < closest[0]:
                        closest = (over, label, need, cap)
                rejected(
                    "memory",
                    f"{label}: needs {units.fmt_bytes(need)} per device of {units.fmt_bytes(cap or 0)}",
                    int(sizes[g] - fitting[g]),
                )
            if (k, nodes) not in winners:
                continue
            i = winners[(k, nodes)]
            if fitting[g] > 1:
                rejected("slower layout", label, int(fitting[g] - 1))
            layout = found.layout(i)
            costs = run_of(profile, catalog, cand, setup, found, i, layout, workload, run)
            band = bands.get(cand.device.id)
            if band is None:
                band = bands[cand.device.id] = band_for(
                    catalog, cand.device, catalog.efficiency[cand.device.efficiency], profile, kind
                )[0]
            inst = cand.instance
            for pricing in pricings:
                hourly = inst.hourly_usd(spot=pricing == "spot")
                if hourly is None:
                    rejections.add(f"no {pricing} price", inst.id)
                    continue
                cost = billed_cost(costs["total_s"], hourly, nodes, inst)
                row = _row(cand, found, i, layout, costs, pricing, hourly, cost, cap, constraints, owned, band)
                feasible.append(row)
    return feasible, rejections, found.layouts, closest


def run_options(constraints: Constraints) -> RunOptions:
    """The run-level settings of the question (checkpoints, evaluation, the input pipeline's workers)."""
    return RunOptions(
        checkpoint_every_s=constraints.checkpoint_every_s, eval_share=constraints.eval_share,
        loader_workers=constraints.loader_workers,
    )  # fmt: skip


def assumptions_for(  # noqa: D103
    profile: Profile, catalog: Catalog, options, workload: Workload, run: RunOptions | None = None
) -> list[str]:
    """What the estimate of each shown option assumes: `estimate()` itself, on the option's layout, with the
    question's run settings (so an input-bound option says what bounds it)."""
    seen: dict[str, None] = {}
    for o in options:
        config = Config(
            device=o.device,
            instance=o.instance,
            devices_per_node=o.devices_per_node,
            nodes=o.nodes,
            precision=o.precision,
            layout=o.layout(),
            micro_batch=o.micro_batch,
            global_batch=o.global_batch,
        )
        for line in estimate(profile, catalog, config, workload, run=run).assumptions:
            seen.setdefault(line, None)
    return list(seen)


def recommend(
    profile: Profile, catalog: Catalog, workload: Workload, constraints: Constraints, top: int = 10
) -> Recommendation:
    """Rank every configuration in `catalog` for training `profile` on `workload` under `constraints`."""
    start = time.perf_counter()
    check_workload(profile, workload)
    if top < 1:
        raise UserError(f"--top must be at least 1, got {top}")
    feasible, rejections, estimated, closest = evaluate(profile, catalog, workload, constraints)
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
    described = shown[:1] or [o for o in (explanation.fastest, explanation.cheapest) if o is not None][:1]
    assumptions = assumptions_for(profile, catalog, described, workload, run_options(constraints))
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
