"""What an estimate is asked for: hardware, parallel layout, precision, batch, workload."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from advisor.errors import UserError
from advisor.vocab import Precision, Strategy


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
    """One configuration to estimate. `devices_per_node` × `nodes` devices run data parallel."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    device: str
    instance: str | None = None
    devices_per_node: int = Field(1, ge=1)
    nodes: int = Field(1, ge=1)
    precision: Precision = "bf16-mixed"
    strategy: Strategy = "single"
    checkpointing: bool = False
    micro_batch: int | None = Field(None, ge=1)
    global_batch: int | None = Field(None, ge=1)
    spot: bool = False

    @property
    def world(self) -> int:
        return self.devices_per_node * self.nodes
