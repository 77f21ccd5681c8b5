"""When nothing qualifies: which constraint binds, the fastest and the cheapest options, what to relax."""

from __future__ import annotations

from advisor import units
from advisor.recommender.candidates import OWNED
from advisor.recommender.model import Constraints, Explanation, Option, Rejections


def _fastest(options: list[Option]) -> Option | None:
    return min(options, key=lambda o: (o.total_time_s, o.cost_usd, o.devices, o.instance), default=None)


def _cheapest(options: list[Option]) -> Option | None:
    return min(options, key=lambda o: (o.cost_usd, o.total_time_s, o.devices, o.instance), default=None)


def _no_feasible(constraints: Constraints, rejections: Rejections, closest) -> Explanation:
    counts = rejections.counts
    if counts.get("memory"):
        relax = []
        if closest is not None:
            over, label, need, have = closest
            relax.append(
                f"closest to fitting: {label} needs {units.fmt_bytes(need)} per device of {units.fmt_bytes(have)}"
            )
        relax.append(f"allow more devices (--max-devices, now {constraints.max_devices}) so FSDP shards further")
        if constraints.devices or constraints.providers:
            relax.append("drop --devices / --providers to include devices with more memory")
        relax.append("a smaller micro-batch or sequence length in the model file (then re-profile)")
        return Explanation(binding=["memory"], summary="no configuration holds the model in memory", relax=relax)
    filtered = sum(counts.get(k, 0) for k in ("provider filter", "device filter"))
    relax = ["drop or widen --providers / --devices"] if filtered else []
    if counts.get(OWNED):
        relax.append("name the owned machines' provider in --providers (e.g. onprem) to include them")
    if counts.get("precision unsupported"):
        relax.append("allow other precisions (--precision)")
    if any(k.startswith("no ") and k.endswith(" price") for k in counts):
        relax.append("use --pricing on-demand (few offers have a spot price in the catalog)")
    return Explanation(
        binding=["filters"], summary="no configuration is left after the filters", relax=relax or ["widen the filters"]
    )


def explain(feasible: list[Option], constraints: Constraints, rejections: Rejections, closest=None) -> Explanation:
    if not feasible:
        return _no_feasible(constraints, rejections, closest)
    deadline, budget = constraints.deadline_s, constraints.budget_usd
    fastest, cheapest = _fastest(feasible), _cheapest(feasible)
    meets_d = [o for o in feasible if o.meets_deadline]
    meets_b = [o for o in feasible if o.within_budget]
    binding: list[str] = []
    relax: list[str] = []
    if deadline is not None and not meets_d:
        binding.append("deadline")
    if budget is not None and not meets_b:
        binding.append("budget")
    if not binding:  # each alone can be met, not both at once
        binding = ["deadline and budget together"]
    if deadline is not None:
        if meets_d:
            best = _cheapest(meets_d)
            relax.append(
                f"raise --budget to {units.fmt_money(best.cost_usd)}: the cheapest option meeting the deadline "
                f"is {best.label()}"
            )
        else:
            relax.append(
                f"extend --deadline to at least {units.fmt_duration(fastest.total_time_s)} (the fastest option, "
                f"{fastest.label()})"
            )
    if budget is not None:
        if meets_b:
            best = _fastest(meets_b)
            relax.append(
                f"extend --deadline to {units.fmt_duration(best.total_time_s)}: the fastest option within the "
                f"budget is {best.label()}"
            )
        else:
            relax.append(
                f"raise --budget to at least {units.fmt_money(cheapest.cost_usd)} (the cheapest option, "
                f"{cheapest.label()})"
            )
    if constraints.deadline_s is not None and fastest.devices * 2 > constraints.max_devices:
        relax.append(f"allow more devices than --max-devices {constraints.max_devices}")
    if constraints.providers or constraints.devices:
        relax.append("drop or widen --providers / --devices")
    if constraints.pricing == "on-demand":
        relax.append("consider --pricing both (spot offers, where the catalog has them)")
    parts = []
    if deadline is not None:
        parts.append(f"deadline {units.fmt_duration(deadline)}")
    if budget is not None:
        parts.append(f"budget {units.fmt_money(budget)}")
    summary = (
        f"no option meets the {' and the '.join(parts)}: the fastest takes "
        f"{units.fmt_duration(fastest.total_time_s)} for {units.fmt_money(fastest.cost_usd)}, the cheapest costs "
        f"{units.fmt_money(cheapest.cost_usd)} and takes {units.fmt_duration(cheapest.total_time_s)}"
    )
    return Explanation(
        binding=binding, summary=summary, fastest=fastest.to_option(), cheapest=cheapest.to_option(), relax=relax
    )
