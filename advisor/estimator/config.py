"""What an estimate is asked for: hardware, parallel layout, precision, batch, workload."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from advisor.errors import UserError
from advisor.estimator.layout import Layout, layout_for
from advisor.vocab import STRATEGIES, Precision, check_choice


class Workload(BaseModel):
    """How much training: exactly one of samples×epochs, steps or tokens."""

    model_config = ConfigDict(extra="forbid")

    samples: float | None = Field(None, gt=0)
    epochs: float | None = Field(None, gt=0)
    steps: float | None = Field(None, gt=0)
    tokens: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _one(self) -> Workload:
        given = [n for n in ("samples", "steps", "tokens") if getattr(self, n) is not None]
        if len(given) > 1:
            raise UserError(f"contradictory workload: {' and '.join('--' + g for g in given)}", "give only one")
        if self.epochs is not None and self.samples is None:
            raise UserError("--epochs needs --samples (the dataset size)", "add --samples N")
        return self

    def empty(self) -> bool:
        return self.samples is None and self.steps is None and self.tokens is None

    def describe(self) -> str:
        if self.samples is not None:
            return f"{self.samples:g} samples × {self.epochs or 1:g} epochs"
        if self.steps is not None:
            return f"{self.steps:g} steps"
        if self.tokens is not None:
            return f"{self.tokens:g} tokens"
        return "one step"


class Config(BaseModel):
    """One configuration to estimate: `devices_per_node` × `nodes` devices running `layout`.

    `strategy` (single, ddp, zero1, zero2, fsdp) and `checkpointing` are accepted as the older words for the
    layout's data-parallel sharding and `recompute full`: without a layout they make a data-parallel one over
    every device."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    device: str
    instance: str | None = None
    devices_per_node: int = Field(1, ge=1)
    nodes: int = Field(1, ge=1)
    precision: Precision = "bf16-mixed"
    layout: Layout = Field(default_factory=Layout)
    micro_batch: int | None = Field(None, ge=1)
    global_batch: int | None = Field(None, ge=1)
    spot: bool = False
    kernels: Literal["auto", "eager", "fused"] = Field(
        "auto",
        description="eager: the profile's ops as eager PyTorch runs them; fused: a large-scale framework's fused "
        "kernels (Megatron, NeMo, Transformer Engine: the family's fused_elementwise); auto: fused for models of "
        "a billion parameters or more and under fp8-mixed, eager otherwise",
    )

    @model_validator(mode="before")
    @classmethod
    def _synonyms(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        strategy = data.pop("strategy", None)
        checkpointing = data.pop("checkpointing", None)
        check_choice(strategy, STRATEGIES, "--strategy")
        if data.get("layout") is None:
            world = int(data.get("devices_per_node", 1)) * int(data.get("nodes", 1))
            data["layout"] = layout_for(world, strategy=strategy, checkpointing=bool(checkpointing))
        return data

    @model_validator(mode="after")
    def _world(self) -> Config:
        if self.layout.world != self.world:
            raise UserError(
                f"the layout tp·pp·cp·dp = {self.layout.world} is not the {self.world} devices "
                f"({self.nodes} node{'s' * (self.nodes > 1)} × {self.devices_per_node})",
                "make tp·pp·cp·dp equal the devices",
            )
        return self

    @property
    def world(self) -> int:
        return self.devices_per_node * self.nodes

    def model_copy(self, *, update: dict | None = None, deep: bool = False) -> Config:
        """A copy with `update` applied; changing the older words (strategy, checkpointing) or the device count
        rebuilds the layout: the same tp, pp, vpp, cp and sequence parallelism, dp from the new device count."""
        words = ("strategy", "checkpointing", "devices_per_node", "nodes")
        if not update or not any(k in update for k in words):
            return super().model_copy(update=update, deep=deep)
        update = dict(update)
        lay = self.layout
        strategy = update.pop("strategy", None)
        checkpointing = update.pop("checkpointing", None)
        data = {k: getattr(self, k) for k in type(self).model_fields}
        data.update(update)
        recompute = lay.recompute
        if checkpointing is not None:
            recompute = "full" if checkpointing else ("none" if lay.recompute == "full" else lay.recompute)
        world = data["devices_per_node"] * data["nodes"]
        data["layout"] = layout_for(
            world, lay.tp, lay.pp, lay.vpp, lay.cp, strategy or lay.strategy, recompute, lay.sequence_parallel
        )
        return Config(**data)

    @computed_field
    @property
    def strategy(self) -> str:
        return self.layout.strategy

    @computed_field
    @property
    def checkpointing(self) -> bool:
        return self.layout.checkpointing
