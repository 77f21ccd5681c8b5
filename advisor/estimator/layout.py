"""A parallel layout: how the devices of a job split the model and the batch.

    world = tp · pp · cp · dp

`tp` tensor parallel (Megatron: the blocks' matmuls split by heads and MLP width), `pp` pipeline stages (the
blocks split in order; `vpp` model chunks per stage for the interleaved schedule), `cp` context parallel (the
sequence split, ring attention), `dp` data parallel replicas, sharding the data-parallel ranks' state
(`none`: DDP replicas; ZeRO `zero1`, `zero2`, and `fsdp` = ZeRO-3), `sequence_parallel` (norms, dropout and
the residual stream split by `tp` too), and `recompute` (none, selective: the attention core, full: every
block). Ranks are ordered tp fastest, then cp, dp and pp (Megatron-LM's default order), which decides which
groups stay inside a node (advisor/estimator/parallel/).

The rules that need nothing but the layout are checked here; the ones that need the model or the hardware
(heads, blocks, sequence, devices) are each dimension's own (advisor/estimator/parallel/*.py), checked once
by `parallel.check`.
"""

from __future__ import annotations

import functools

from pydantic import BaseModel, ConfigDict, Field, model_validator

from advisor.errors import UserError
from advisor.vocab import STRATEGY_SHARDING, Recompute, Sharding


class Layout(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tp: int = Field(1, ge=1, description="tensor-parallel degree")
    pp: int = Field(1, ge=1, description="pipeline stages")
    vpp: int = Field(1, ge=1, description="model chunks per pipeline stage (interleaved schedule)")
    cp: int = Field(1, ge=1, description="context-parallel degree (sequence split)")
    dp: int = Field(1, ge=1, description="data-parallel replicas")
    sharding: Sharding = Field("none", description="what the data-parallel ranks shard: none, zero1, zero2, fsdp")
    sequence_parallel: bool = False
    recompute: Recompute = "none"

    @model_validator(mode="after")
    def _rules(self) -> Layout:
        if self.sequence_parallel and self.tp == 1:
            raise UserError(
                "sequence parallelism splits along the tensor-parallel group, and tp is 1",
                "use --tp 2 or more with --sequence-parallel, or --no-sequence-parallel",
            )
        if self.vpp > 1 and self.pp == 1:
            raise UserError(
                f"--vpp {self.vpp} interleaves pipeline stages, and pp is 1",
                "use --pp 2 or more with --vpp, or --vpp 1",
            )
        return self

    @property
    def world(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

    @property
    def replicas(self) -> int:
        """Ranks that hold the same weights and reduce gradients together: data- and context-parallel ones."""
        return self.dp * self.cp

    @property
    def strategy(self) -> str:
        """The sharding in the older vocabulary: single, ddp, zero1, zero2, fsdp."""
        if self.sharding != "none":
            return self.sharding
        return "ddp" if self.replicas > 1 else "single"

    @property
    def checkpointing(self) -> bool:
        return self.recompute == "full"

    def label(self) -> str:
        """'TP8 PP4×2 CP2 DP4 zero1 SP sel': the non-trivial dimensions, compact, for tables."""
        parts = [f"TP{self.tp}"] if self.tp > 1 else []
        if self.pp > 1:
            parts.append(f"PP{self.pp}" + (f"×{self.vpp}" if self.vpp > 1 else ""))
        if self.cp > 1:
            parts.append(f"CP{self.cp}")
        parts.append(f"DP{self.dp}")
        if self.sharding != "none":
            parts.append(self.sharding)
        if self.sequence_parallel:
            parts.append("SP")
        if self.recompute != "none":
            parts.append({"selective": "sel", "full": "full"}[self.recompute])
        return " ".join(parts)


def layout_for(
    world: int,
    tp: int = 1,
    pp: int = 1,
    vpp: int = 1,
    cp: int = 1,
    strategy: str | None = None,
    recompute: str | None = None,
    sequence_parallel: bool | None = None,
    checkpointing: bool = False,
) -> Layout:
    """The layout of `world` devices from the CLI's words: dp = world / (tp·pp·cp); `strategy` names the
    sharding (single|ddp = none); `checkpointing` is `recompute full`; sequence parallelism defaults to on
    whenever tp > 1 (it never costs more: the same traffic as tp's all-reduces, less memory)."""
    model = tp * pp * cp
    if model < 1 or world % model:
        raise UserError(
            f"the layout does not fit the devices: tp·pp·cp = {tp}·{pp}·{cp} = {model} must divide the {world} devices "
            "(world = tp·pp·cp·dp)",
            f"use tp·pp·cp among {', '.join(str(d) for d in divisors(world)[:12])}",
        )
    if checkpointing and recompute not in (None, "full"):
        raise UserError(f"--checkpointing means --recompute full, not {recompute}", "give one of them")
    recompute = recompute or ("full" if checkpointing else "none")
    sharding = STRATEGY_SHARDING[strategy or "ddp"]
    sp = tp > 1 if sequence_parallel is None else sequence_parallel
    return Layout(
        tp=tp, pp=pp, vpp=vpp, cp=cp, dp=world // model, sharding=sharding, sequence_parallel=sp, recompute=recompute
    )


@functools.lru_cache(maxsize=4096)
def _divisors(n: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, n + 1) if n % d == 0)


def divisors(n: int) -> list[int]:
    return list(_divisors(n))


def nearest(value: int, valid: list[int], k: int = 2) -> list[int]:
    """The `k` valid values closest to `value` (ties: the smaller), in increasing order."""
    return sorted(sorted(valid, key=lambda v: (abs(v - value), v))[:k])
