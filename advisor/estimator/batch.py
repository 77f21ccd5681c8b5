"""The global batch: where it comes from, and how a configuration splits it.

A training recipe fixes the global batch (samples per optimizer step): beyond the critical batch size more
samples per step do not buy proportionally fewer steps, so hardware is compared at the recipe's batch, not at
whatever grows with the device count. Sources, in order (`resolve_global_batch`):

1. `--global-batch` (or `Config.global_batch` from code);
2. the model file's `GLOBAL_BATCH`, recorded in the profile by the profiler (`profile.global_batch`);
3. `--micro-batch` × data-parallel devices, when a micro-batch is given and nothing else is;
4. the profiled batch (`profile.batch_size`), with a note saying so.

Every configuration then trains at that batch: micro-batch × accumulation steps × data-parallel replicas
equals it exactly whenever some factorization does (`plan_batch` searches the divisors: 512 on 2 replicas is
16 × 16 × 2, not 20 × 13 × 2), else the nearest, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from advisor.errors import UserError

if TYPE_CHECKING:
    from advisor.profiler.schema import Profile

FLAG = "--global-batch"
MODEL_FILE = "the model file's GLOBAL_BATCH"
MICRO = "--micro-batch × devices"
PROFILED = "the profiled batch"


@dataclass(frozen=True)
class GlobalBatch:
    samples: int
    source: str  # one of FLAG, MODEL_FILE, MICRO, PROFILED
    detail: str = ""  # the recipe's citation (model file), or what to do (profiled batch)

    def describe(self) -> str:
        text = f"global batch {self.samples:,} from {self.source}"
        return f"{text} ({self.detail})" if self.detail else text


def resolve_global_batch(
    profile: Profile, asked: int | None, micro_batch: int | None = None, data_parallel: int = 1
) -> GlobalBatch:
    """The global batch a question is answered at, and where it came from (see the module docstring)."""
    if asked is not None:
        return GlobalBatch(asked, FLAG)
    recipe = getattr(profile, "global_batch", None)
    if recipe:
        return GlobalBatch(recipe, MODEL_FILE, getattr(profile, "global_batch_source", None) or "")
    if micro_batch is not None:
        return GlobalBatch(micro_batch * data_parallel, MICRO)
    return GlobalBatch(
        profile.batch_size,
        PROFILED,
        f"{profile.name} names no GLOBAL_BATCH: give --global-batch, or set GLOBAL_BATCH in the model file",
    )


@dataclass(frozen=True)
class BatchPlan:
    """How one configuration makes up the global batch."""

    micro_batch: int
    accumulation: int
    data_parallel: int
    asked: int
    reason: str | None = None  # why the global batch differs from the one asked for (None: exact)

    @property
    def global_batch(self) -> int:
        return self.micro_batch * self.accumulation * self.data_parallel

    @property
    def exact(self) -> bool:
        return self.global_batch == self.asked


def too_many_replicas(global_batch: int, data_parallel: int) -> bool:
    """More data-parallel replicas than samples per step: some replica would have no sample."""
    return data_parallel > global_batch


@lru_cache(maxsize=4096)
def largest_divisor(n: int, cap: int) -> int:
    """The largest divisor of n that is at most cap (1 at least)."""
    for d in range(min(n, max(cap, 1)), 0, -1):
        if n % d == 0:
            return d
    return 1


@lru_cache(maxsize=8192)
def plan_batch(global_batch: int, data_parallel: int, max_micro: int, micro: int | None = None) -> BatchPlan:
    """Micro-batch × accumulation × `data_parallel` for `global_batch` samples per step.

    `max_micro` is the largest micro-batch that fits in memory; `micro`, when given, is fixed (the user's
    --micro-batch). Exact when some factorization is: the largest micro-batch ≤ max_micro that divides the
    per-replica batch, then the fewest accumulation steps. Otherwise the nearest global batch (per-replica
    batch rounded down or up, or accumulation rounded for a fixed micro-batch), ties to fewer accumulation
    steps and then to rounding up, with the reason. Raises UserError when there are more replicas than samples."""
    if global_batch < 1 or data_parallel < 1:
        raise ValueError(f"global batch {global_batch} and data-parallel degree {data_parallel} must be ≥ 1")
    if too_many_replicas(global_batch, data_parallel):
        raise UserError(
            f"global batch {global_batch} is smaller than the {data_parallel} data-parallel replicas "
            "(each needs at least one sample)",
            f"use --global-batch {data_parallel} or more, or fewer devices",
        )
    if micro is not None:
        accum = max(1, round(global_batch / (micro * data_parallel)))
        plan = BatchPlan(micro, accum, data_parallel, global_batch)
        if not plan.exact:
            plan = BatchPlan(
                micro,
                accum,
                data_parallel,
                global_batch,
                f"micro-batch {micro} × {data_parallel} replicas does not divide {global_batch}: "
                f"{plan.global_batch} ({micro} × {accum} × {data_parallel})",
            )
        return plan
    cap = max(1, max_micro)
    if global_batch % data_parallel == 0:
        per = global_batch // data_parallel
        m = largest_divisor(per, cap)
        return BatchPlan(m, per // m, data_parallel, global_batch)
    options = []
    for per in {global_batch // data_parallel, -(-global_batch // data_parallel)}:
        if per >= 1:
            m = largest_divisor(per, cap)
            options.append((abs(per * data_parallel - global_batch), per // m, -per, m))
    _, accum, per, m = min(options)  # nearest, then fewer accumulation steps, then rounding up
    per = -per
    return BatchPlan(
        m,
        accum,
        data_parallel,
        global_batch,
        f"{data_parallel} replicas do not divide {global_batch}: the nearest is {per * data_parallel} "
        f"({m} × {accum} × {data_parallel})",
    )
