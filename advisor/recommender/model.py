"""What a recommendation is: the question asked, the ranked options, the rejections and, when nothing
qualifies, the explanation. Plain pydantic values, so the table, JSON, YAML and the export agree."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.profiler.schema import Count, Finite, NonNegative
from advisor.vocab import DeviceKind, Precision, Recompute, Sharding, Strategy

Positive = Annotated[float, Field(gt=0, le=1e30, allow_inf_nan=False)]
Whole = Annotated[int, Field(ge=1, le=10**9)]
Objective = Literal["cost", "time"]
PricingChoice = Literal["on-demand", "spot", "both"]


class Constraints(BaseModel):
    model_config = ConfigDict(extra="forbid")

    deadline_s: Positive | None = None
    budget_usd: Positive | None = None
    objective: Objective = "cost"
    providers: list[str] = []
    devices: list[str] = Field([], description="device ids the --devices filter allowed (empty: all)")
    device_filter: list[str] = Field([], description="the --devices terms as given")
    max_devices: int = Field(512, ge=1)
    pricing: PricingChoice = "on-demand"
    precisions: list[str] = []
    global_batch: int | None = Field(None, ge=1)
    checkpoint_every_s: float | None = Field(None, ge=0, description="None: the catalog's default; 0: at the end")
    eval_share: float | None = Field(None, ge=0, lt=1, description="None: the catalog's default")
    loader_workers: int | None = Field(None, ge=1, description="image-decoding processes per device; None: all vCPUs")


class Option(BaseModel):
    """One estimated configuration with its price: everything the table and the exports show."""

    model_config = ConfigDict(extra="forbid")

    rank: Whole | None = None
    provider: str
    instance: str
    instance_name: str
    region: str
    device: str
    device_kind: DeviceKind
    nodes: Whole
    devices_per_node: Whole
    devices: Whole
    precision: Precision
    strategy: Strategy = Field(description="how the data-parallel replicas shard: single, ddp, zero1, zero2, fsdp")
    checkpointing: bool = Field(description="full recomputation")
    tp: Whole = 1
    pp: Whole = 1
    vpp: Whole = 1
    cp: Whole = 1
    dp: Whole = 1
    sharding: Sharding = "none"
    sequence_parallel: bool = False
    recompute: Recompute = "none"
    pricing: Literal["on-demand", "spot"]
    step_time_s: NonNegative
    total_time_s: NonNegative = Field(description="the whole run: start-up, steps, evaluation and checkpoints")
    startup_s: NonNegative = Field(0.0, description="provisioning, setup and initialisation")
    checkpoint_s: NonNegative = Field(0.0, description="all checkpoint writes")
    eval_s: NonNegative = 0.0
    input_bound: bool = Field(False, description="the host's input pipeline holds the devices back")
    owned: bool = Field(False, description="owned machines at an amortized price, not rented")
    price_as_of: str | None = Field(None, description="when the instance's price was read (ISO date)")
    cost_usd: NonNegative
    usd_per_hour: NonNegative = Field(description="all nodes together")
    steps: NonNegative
    micro_batch: Whole
    accumulation: Whole
    global_batch: Whole
    global_batch_reason: str | None = Field(None, description="why the global batch differs from the one asked")
    mfu: NonNegative
    memory_bytes: NonNegative
    memory_capacity_bytes: NonNegative | None = None
    memory_headroom_bytes: Finite | None = None
    error_band: NonNegative | None = Field(None, description="expected |error| of the time (a fraction); see estimate")
    pareto: bool = False
    meets_deadline: bool = True
    within_budget: bool = True

    def layout(self):
        from advisor.estimator.layout import Layout

        return Layout(
            tp=self.tp,
            pp=self.pp,
            vpp=self.vpp,
            cp=self.cp,
            dp=self.dp,
            sharding=self.sharding,
            sequence_parallel=self.sequence_parallel,
            recompute=self.recompute,
        )

    def label(self) -> str:
        where = f"{self.nodes}×{self.devices_per_node} {self.device}"
        return f"{self.instance} ({where}, {self.precision}, {Option.layout(self).label()}, {self.pricing})"


def _row_label(self) -> str:
    return Option.label(self)  # type: ignore[arg-type]


def _row_layout(self):
    return Option.layout(self)  # type: ignore[arg-type]


def _to_option(self) -> Option:
    return Option(**{name: getattr(self, name) for name in OPTION_FIELDS})


OPTION_FIELDS = tuple(Option.model_fields)
# The same fields as a plain slotted dataclass: what the recommender makes for each of thousands of
# candidates (a pydantic model costs ~25 µs to build even unvalidated). Only the options that are shown or
# exported become `Option`s, through `to_option()`.
Row = dataclasses.make_dataclass(
    "Row",
    [(name, Any) for name in OPTION_FIELDS],
    slots=True,
    namespace={"label": _row_label, "layout": _row_layout, "to_option": _to_option},
)


class Rejections(BaseModel):
    """Candidates that were dropped, counted by reason, with a few examples of each."""

    model_config = ConfigDict(extra="forbid")

    counts: dict[str, Count] = {}
    examples: dict[str, list[str]] = {}

    def add(self, reason: str, example: str, n: int = 1, keep: int = 3) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + n
        shown = self.examples.setdefault(reason, [])
        if len(shown) < keep:
            shown.append(example)

    def total(self) -> int:
        return sum(self.counts.values())


class Explanation(BaseModel):
    """Why nothing qualified, and what would change that."""

    model_config = ConfigDict(extra="forbid")

    binding: list[str] = Field(description="the constraints that rule every option out")
    summary: str
    fastest: Option | None = None
    cheapest: Option | None = None
    relax: list[str] = []


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid")

    profile: str
    global_batch: int | None = Field(None, description="samples per step every option trains at")
    global_batch_source: str = Field("", description="where it came from: --global-batch, the model file, ...")
    global_batch_detail: str = ""
    profile_sha256: str
    parameters: Count
    workload: dict[Literal["samples", "epochs", "steps", "tokens"], Positive]
    workload_text: str
    constraints: Constraints


class Recommendation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: Question
    catalog_as_of: dict[str, str] = Field(description="oldest and newest as-of dates of the catalog entries")
    catalog_overrides: list[str] = []
    assumptions: list[str] = []
    candidates: Count = Field(description="configurations considered")
    estimated: Count = Field(description="configurations estimated (the rest were filtered before)")
    qualifying: Count
    options: list[Option] = Field(max_length=100_000, description="the best qualifying options, ranked")
    pareto: list[Option] = Field(
        [], max_length=100_000, description="time-cost Pareto front of every option that fits in memory"
    )
    rejections: Rejections
    explanation: Explanation | None = None
    elapsed_s: NonNegative = 0.0
    # every option that fits in memory and has a price (Rows), for plots and comparisons; not exported
    feasible: list[Any] = Field([], exclude=True)
