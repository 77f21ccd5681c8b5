"""Memory per device under a parallel layout: weights, gradients, optimizer state, activations, temporaries,
reserve. This module only sums what each parallel dimension says (advisor/estimator/parallel/*.py):

- parameters on a device: its pipeline stage's blocks (plus the embedding on the first stage and the head on
  the last), matrices divided by tp (parallel/tensor.py); then weights, gradients and optimizer state by the
  data-parallel sharding over the dp·cp replicas (parallel/data.py: DDP 16Ψ, ZeRO-1 4Ψ + 12Ψ/N, ZeRO-2
  2Ψ + 14Ψ/N, FSDP 16Ψ/N for mixed-precision Adam);
- activations (the profile's saved tensors by part, advisor/profiler/schema.ActivationParts), per block and
  micro-batch `R/t_sp + (S + C)/t` divided by cp, without C under selective recomputation, only the block
  input under full recomputation (parallel/tensor.py, parallel/context.py), times the micro-batches the
  pipeline schedule keeps in flight (parallel/pipeline.py); batch-independent saved tensors (the 16-bit copies
  of the weights autocast makes) follow the weights instead, and a ZeRO-1/2 run keeps none (its weights are
  16-bit already);
- temporaries: the profile's peak temporaries (divided like activations), DDP's buckets or FSDP's gathered
  units, the FP8 copies of the block weights (weight and transpose, 2 bytes per parameter);
- the reserve of the device family (context, workspaces, fragmentation).

Every stage is evaluated (first, the fullest middle one, last) and the fullest one is reported. Everything
here works on numpy arrays of layouts (the search) as well as on one layout (`estimate`).
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel

from advisor.estimator.parallel import data, pipeline
from advisor.estimator.parallel.tensor import block_weights, device_parameters
from advisor.estimator.setup import Setup, activation_scale, capacity, optimizer_states, repeated_blocks  # noqa: F401

FP8_WEIGHT_BYTES = 2.0  # an FP8 recipe keeps each split block weight in fp8 and its transpose


class Memory(BaseModel):
    parameter_bytes: float
    gradient_bytes: float
    optimizer_state_bytes: float
    activation_bytes: float
    temporary_bytes: float
    reserve_bytes: float
    total_bytes: float
    capacity_bytes: float | None
    fits: bool
    headroom_bytes: float | None


PARTS = ("parameter_bytes", "gradient_bytes", "optimizer_state_bytes", "activation_bytes", "temporary_bytes")


def _block_activations(setup: Setup, lay: dict, micro, in_flight, n_blocks):
    """Saved tensors of `n_blocks` blocks on one device with `in_flight` micro-batches kept."""
    a, blocks, scale = setup.acts, setup.blocks, setup.act_scale
    tp, cp, rec = lay["tp"], lay["cp"], lay["rec"]
    t_sp = np.where(lay["sp"], tp, 1)
    zero12 = (lay["level"] == 1) | (lay["level"] == 2)
    per = micro / cp / blocks  # per block, per micro-batch, after context parallelism
    whole = per * (a.block_replicated.per_sample / t_sp + (a.block_sharded.per_sample + a.block_scores.per_sample) / tp)
    kept = whole - np.where(rec == 1, per * a.block_scores.per_sample / tp, 0.0)
    copies = np.where(
        zero12, 0.0, (a.block_replicated.fixed + a.block_sharded.fixed + a.block_scores.fixed) / blocks / tp
    )
    inputs = per * a.block_inputs.per_sample / t_sp + a.block_inputs.fixed / blocks / t_sp
    full = in_flight * n_blocks * inputs + whole + copies  # one block is whole while it is recomputed
    return scale * np.where(rec == 2, full, in_flight * n_blocks * kept + n_blocks * copies)


def stage_memory(setup: Setup, lay: dict, micro, stage: str) -> dict:
    """Memory parts of one device of the first, fullest middle or last stage (arrays over layouts)."""
    tp, pp, vpp, cp, level = lay["tp"], lay["pp"], lay["vpp"], lay["cp"], lay["level"]
    replicas = lay["dp"] * cp
    n_first, n_mid, n_last = lay["stages"]
    single = pp == 1
    if stage == "first":
        first, last, n_here = True, single, n_first
        flight = np.where(single, 1.0, pipeline.in_flight(pp, vpp, lay["m"], 0))
    elif stage == "mid":
        first, last, n_here = False, False, n_mid
        flight = np.minimum(lay["m"], np.maximum(pp - 1, 1))
    else:
        first, last, n_here = single, True, np.where(single, n_first, n_last)
        flight = 1.0
    psi = device_parameters(setup.params, tp, setup.blocks, n_here, first, last)
    psi_train = psi * setup.train_share
    weights, grads, states = data.state_memory(psi, psi_train, level, replicas, setup.widths, pp)
    a = setup.acts
    t_sp = np.where(lay["sp"], tp, 1)
    acts = _block_activations(setup, lay, micro, flight, n_here)
    before = first * (flight * a.before.per_sample * micro / (t_sp * cp) + a.before.fixed)
    after = (a.after_replicated.per_sample / t_sp + a.after_sharded.per_sample / tp) * micro / cp
    after = last * (after + a.after_replicated.fixed + a.after_sharded.fixed / tp)
    acts = acts + setup.act_scale * (before + after)
    units = np.maximum(n_here * setup.fsdp_units / setup.blocks, 1)
    temps = data.temporaries(psi, psi_train, level, replicas, units, setup.widths, pp)
    temps = temps + setup.profile.memory.temporary_peak_bytes.at(micro) * setup.act_scale / (tp * cp)
    temps = temps + np.where(setup.fp8, FP8_WEIGHT_BYTES * block_weights(setup.params, tp, setup.blocks, n_here), 0.0)
    if stage == "mid":  # no middle stage: nothing there
        empty = (pp <= 2) | (n_mid == 0)
        weights, grads, states, acts, temps = (np.where(empty, 0.0, x) for x in (weights, grads, states, acts, temps))
    total = weights + grads + states + acts + temps + setup.reserve
    return {
        "parameter_bytes": weights,
        "gradient_bytes": grads,
        "optimizer_state_bytes": states,
        "activation_bytes": acts,
        "temporary_bytes": temps,
        "total_bytes": total,
    }


def memory_arrays(setup: Setup, lay: dict, micro) -> dict:
    """The fullest stage's memory parts per layout, and its name (0 first, 1 middle, 2 last)."""
    if not np.any(lay["pp"] > 1):  # one stage: first and last are the same
        out = stage_memory(setup, lay, micro, "first")
        out["stage"] = np.zeros(np.shape(out["total_bytes"]), dtype=np.int64)
        out["reserve_bytes"] = np.broadcast_to(setup.reserve, np.shape(out["total_bytes"]))
        return out
    stages = [stage_memory(setup, lay, micro, s) for s in ("first", "mid", "last")]
    totals = np.stack([s["total_bytes"] for s in stages])
    which = np.argmax(totals, axis=0)
    out = {k: np.choose(which, [s[k] for s in stages]) for k in stages[0]}
    out["stage"] = which
    out["reserve_bytes"] = np.broadcast_to(setup.reserve, np.shape(which))
    return out


def to_memory(setup: Setup, parts: dict, i: int = 0) -> Memory:
    cap = setup.capacity
    total = float(parts["total_bytes"][i])
    return Memory(
        **{k: float(parts[k][i]) for k in PARTS},
        reserve_bytes=setup.reserve,
        total_bytes=total,
        capacity_bytes=cap,
        fits=cap is None or total <= cap,
        headroom_bytes=None if cap is None else cap - total,
    )


def largest_micro_batch(setup: Setup, lay: dict, limit: int, per_replica: int) -> int:
    """The largest micro-batch ≤ limit that fits (1 when even 1 does not). Memory is linear in the micro-batch
    for a fixed number of micro-batches in flight: the line through 1 and 2 (with the most in flight) gives a
    micro-batch that surely fits, then a few exact checks confirm it against rounding."""

    def total(micro: int) -> float:
        sized = dict(lay, m=np.asarray([math.ceil(per_replica / micro)]))
        return float(memory_arrays(setup, sized, np.asarray([micro]))["total_bytes"][0])

    cap = setup.capacity
    one = total(1)
    if cap is None or limit <= 1:
        return limit if cap is None else 1
    if one > cap:
        return 1
    worst = dict(lay, m=np.asarray([max(per_replica, 1)]))  # the most micro-batches in flight
    t1 = float(memory_arrays(setup, worst, np.asarray([1]))["total_bytes"][0])
    t2 = float(memory_arrays(setup, worst, np.asarray([2]))["total_bytes"][0])
    slope = t2 - t1
    best = limit if slope <= 0 else min(limit, 1 + math.floor((cap - t1) / slope))
    while best > 1 and total(best) > cap:
        best -= 1  # floating-point rounding at the boundary: at most a step or two
    return max(best, 1)


def _config_setup(profile, config, device, eff, instance) -> tuple[Setup, dict]:
    from advisor.estimator.estimate import layout_arrays
    from advisor.estimator.setup import setup_for

    # memory needs no links: the fabric is not checked (nodes 1)
    setup = setup_for(profile, device, eff, instance, config.precision, config.devices_per_node, 1)
    return setup, layout_arrays(setup, config.layout, 1)


def memory_for(profile, config, device, eff, instance, micro: int, blocks: int | None = None) -> Memory:
    """Memory per device of `config` at micro-batch `micro` (one micro-batch in flight per stage and step)."""
    setup, lay = _config_setup(profile, config, device, eff, instance)
    return to_memory(setup, memory_arrays(setup, lay, np.asarray([micro])))


def max_micro_batch(profile, config, device, eff, instance, limit: int, blocks: int | None = None) -> int:
    """The largest micro-batch ≤ limit of `config` that fits (1 when even 1 does not)."""
    setup, lay = _config_setup(profile, config, device, eff, instance)
    return largest_micro_batch(setup, lay, limit, limit)
