"""One module per parallel dimension: its memory division, its communication, its validity rules.

- data.py      data parallelism and its sharding: DDP, ZeRO-1, ZeRO-2, FSDP (ZeRO-3)
- tensor.py    tensor parallelism (Megatron) and sequence parallelism; which ops and parameters split
- pipeline.py  pipeline stages, the 1F1B and interleaved schedules' bubble, in-flight activations, p2p sends
- context.py   context parallelism (ring attention): the sequence split, the KV exchange

The estimator (advisor/estimator/estimate.py, memory.py) only sums what these say; `check` runs each
dimension's rules once per layout.
"""

from __future__ import annotations

from advisor.errors import UserError
from advisor.estimator.layout import Layout
from advisor.estimator.parallel import context, pipeline, tensor
from advisor.profiler.schema import Structure


def check(layout: Layout, structure: Structure | None, world: int, domain: int) -> list[str]:
    """Every dimension's rules for `layout` on `world` devices (UserError naming the rule and the nearest
    valid values); returns the notes worth telling the user (e.g. tensor parallelism across nodes)."""
    if layout.world != world:
        raise UserError(
            f"the layout tp·pp·cp·dp = {layout.tp}·{layout.pp}·{layout.cp}·{layout.dp} = {layout.world} is not the "
            f"{world} devices (world = tp·pp·cp·dp)",
            f"use dp = {world // (layout.tp * layout.pp * layout.cp)}"
            if world % (layout.tp * layout.pp * layout.cp) == 0
            else "choose tp·pp·cp dividing the devices",
        )
    notes = tensor.check(layout, structure, domain)
    notes += pipeline.check(layout, structure)
    notes += context.check(layout, structure)
    return notes
