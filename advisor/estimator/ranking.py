"""`advisor estimate … --search`: every valid layout of one configuration, ranked, and the best one in full.

The layouts come from the layout search (search.py, exhaustive: every model-parallel size); those that fit are
ranked by step time (for a fixed configuration the fastest is also the cheapest), and the best is estimated
again by `estimate()` itself, so the detailed answer and the ranking cannot disagree.
"""

from __future__ import annotations

import time

import numpy as np
from pydantic import BaseModel, Field

from advisor.catalog.schema import Catalog, Device, Instance
from advisor.estimator.batch import resolve_global_batch
from advisor.estimator.config import Config
from advisor.estimator.estimate import Estimate, estimate, host_share, scaled_device
from advisor.estimator.layout import Layout
from advisor.estimator.search import search
from advisor.estimator.setup import setup_for
from advisor.profiler.schema import Profile


class LayoutRow(BaseModel):
    rank: int
    layout: Layout
    label: str
    micro_batch: int
    accumulation: int
    global_batch: int
    step_time_s: float
    mfu: float
    memory_bytes: float


class LayoutSearch(BaseModel):
    profile: str
    hardware: str
    devices: int
    nodes: int
    precision: str
    evaluated: int = Field(description="layouts evaluated (each at its best micro-batches)")
    fitting: int = Field(description="of them, those that fit in memory")
    elapsed_s: float
    layouts: list[LayoutRow] = Field(description="the fastest layouts that fit, best first")
    best: Estimate | None = Field(None, description="the best layout, estimated in full")


def ranked_layouts(
    profile: Profile,
    catalog: Catalog,
    device: Device,
    instance: Instance | None,
    per_node: int,
    nodes: int,
    precision: str,
    global_batch: int | None,
    top: int = 10,
) -> LayoutSearch:
    start = time.perf_counter()
    global_batch = resolve_global_batch(profile, global_batch).samples  # the recipe's, unless asked otherwise
    scaled = scaled_device(device, host_share(device, instance))
    eff = catalog.efficiency[device.efficiency]
    setup = setup_for(profile, scaled, eff, instance, precision, per_node, nodes)
    found = search(setup, [nodes], global_batch, exhaustive=True)
    fit = np.flatnonzero(found.fits)
    order = fit[np.lexsort((found.memory[fit], found.step[fit]))]
    rows, seen = [], set()
    for i in order:
        layout = found.layout(int(i))
        if layout in seen:  # the same layout at a slower micro-batch
            continue
        seen.add(layout)
        rows.append(
            LayoutRow(
                rank=len(rows) + 1,
                layout=layout,
                label=layout.label(),
                micro_batch=int(found.micro[i]),
                accumulation=int(found.m[i]),
                global_batch=int(found.micro[i] * found.m[i] * found.dp[i]),
                step_time_s=float(found.step[i]),
                mfu=float(found.mfu[i]),
                memory_bytes=float(found.memory[i]),
            )
        )
        if len(rows) == top:
            break
    best = None
    if rows:
        config = Config(
            device=device.id,
            instance=instance.id if instance else None,
            devices_per_node=per_node,
            nodes=nodes,
            precision=precision,
            layout=rows[0].layout,
            micro_batch=rows[0].micro_batch,
            global_batch=rows[0].global_batch,
        )
        best = estimate(profile, catalog, config)
    return LayoutSearch(
        profile=profile.name,
        hardware=instance.id if instance else device.id,
        devices=per_node * nodes,
        nodes=nodes,
        precision=precision,
        evaluated=found.layouts,
        fitting=len({found.layout(int(i)) for i in fit}),
        elapsed_s=time.perf_counter() - start,
        layouts=rows,
        best=best,
    )
