"""The profile: what one training step of a model costs, independent of hardware. Saved as versioned YAML.

Every quantity that depends on the batch is a `Linear` (fixed + per_sample × batch), fitted from two
profiled batch sizes, so the estimator can ask for any batch size. `linear_in_batch` says whether the fit
is trustworthy (see advisor/profiler/linear.py for the test).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from advisor.errors import UserError
from advisor.vocab import PHASES, Category, ModelSourceKind, Phase  # noqa: F401 - PHASES is re-exported

SCHEMA_VERSION = 1


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Linear(Strict):
    """A quantity that is `fixed + per_sample * batch`."""

    fixed: float = 0.0
    per_sample: float = 0.0

    def at(self, batch: float) -> float:
        return self.fixed + self.per_sample * batch

    @classmethod
    def fit(cls, b1: int, v1: float, b2: int, v2: float) -> Linear:
        """The line through (b1, v1) and (b2, v2)."""
        per = (v2 - v1) / (b2 - b1)
        return cls(fixed=v1 - per * b1, per_sample=per)

    @classmethod
    def proportional(cls, batch: int, value: float) -> Linear:
        return cls(fixed=0.0, per_sample=value / batch)

    @classmethod
    def constant(cls, value: float) -> Linear:
        return cls(fixed=value, per_sample=0.0)


class OpRecord(Strict):
    """Identical calls of one aten op (same op, shapes, dtype, phase, module pattern), aggregated.

    flops / bytes_read / bytes_written are totals over `count` calls, not per call.
    """

    op: str = Field(description="aten op, e.g. 'aten.mm'")
    phase: Phase
    category: Category
    dtype: str
    module: str = Field(description="module path it ran under; repeated layers' indices are written '*'")
    count: int = Field(ge=1, description="calls per training step")
    flops: Linear
    bytes_read: Linear
    bytes_written: Linear
    shapes: str = Field("", description="input shapes at the default batch size, for display")
    uncounted: bool = Field(False, description="no FLOP formula is known for this op: flops are 0")


class NvmlInfo(Strict):
    name: str
    memory_total_bytes: float | None = None
    memory_used_bytes: float | None = None
    sm_count: int | None = None
    sm_clock_max_mhz: float | None = None
    memory_clock_max_mhz: float | None = None
    driver_version: str | None = None


class ActivationParts(Strict):
    """The tensors saved for backward (`Memory.activation_bytes`) by where they were saved, for the parallel
    layouts: before the repeated blocks (embeddings), inside them, after them (final norm, head, loss). Inside
    and after, `replicated` are those whose innermost dimension is the hidden size (norm and residual inputs,
    which tensor parallelism keeps whole unless sequence parallelism splits them), `sharded` the rest (heads,
    the MLP's hidden, logits), `scores` the attention probabilities and dropout masks ([.., s, s]) that selective
    recomputation drops. `block_inputs` are the blocks' inputs (what full recomputation keeps). Totals over
    all blocks."""

    before: Linear = Linear()
    block_replicated: Linear = Linear()
    block_sharded: Linear = Linear()
    block_scores: Linear = Linear()
    after_replicated: Linear = Linear()
    after_sharded: Linear = Linear()
    block_inputs: Linear = Linear()


class Structure(Strict):
    """What parallel layouts divide, derived from the profile's records (advisor/profiler/structure.py)."""

    blocks: int = Field(ge=1, description="repeated blocks (transformer layers)")
    block_module: str = Field(description="their module pattern, e.g. 'layers.*'")
    hidden: int | None = Field(None, description="width of a block's input")
    heads: int | None = None
    kv_heads: int | None = None
    seq_len: int | None = None
    attention: str | None = Field(None, description="'fused' (one attention kernel), 'unfused' or None")
    parameters: dict[str, int] = Field(
        {},
        description="parameters by where their module runs (before, block, after the blocks) and whether tensor "
        "parallelism splits them (sharded: matrices; replicated: vectors), e.g. block_sharded",
    )


class Memory(Strict):
    parameter_bytes: float
    gradient_bytes: float
    optimizer_state_bytes: float
    activation_bytes: Linear = Field(description="tensors saved for backward, deduplicated by storage")
    checkpoint_bytes: Linear = Field(
        description="kept under activation checkpointing of the repeated blocks: their inputs, what is saved "
        "outside them, and one block's saved tensors (alive while that block is recomputed)"
    )
    temporary_peak_bytes: Linear = Field(
        description="peak minus parameters, gradients, optimizer state and activations (at least 0)"
    )
    peak_bytes: Linear = Field(
        description="peak of all live tensors during a steady-state step (the optimizer state "
        "resident from the previous step), parameters included"
    )
    measured_peak_bytes: float | None = Field(None, description="torch.cuda.max_memory_allocated (CUDA only)")
    nvml: NvmlInfo | None = None
    activation_parts: ActivationParts | None = Field(None, description="activation_bytes by where it was saved")


class Timing(Strict):
    device_name: str
    catalog_device: str | None = None
    batch_size: int
    warmup: int
    repeats: int
    step_time_s: float = Field(description="median of the timed steps")
    forward_s: float | None = None
    backward_s: float | None = None
    optimizer_s: float | None = None


class ModelSource(Strict):
    """What the profiled model was built from, so an estimate can say so (absent in older profiles)."""

    kind: ModelSourceKind
    id: str = Field(description="as asked for: a file name, a shipped name, a Hub id or config path, a model name")
    library: str | None = Field(None, description="transformers, timm or torchvision; none for a model file")
    library_version: str | None = None
    config_sha256: str | None = Field(
        None,
        description="sha256 of the model file or config.json as read; for timm and torchvision, of the model's "
        "default configuration as canonical JSON",
    )
    architecture: str | None = Field(None, description="the model class built, e.g. GPT2LMHeadModel")
    task: str | None = Field(None, description="Hugging Face models: the head built (causal-lm, masked-lm, ...)")
    inputs: str | None = Field(None, description="how the batch was made, e.g. 'sequence 1024 (n_positions)'")

    def text(self) -> str:
        """'hf:gpt2 (transformers 5.2.0, GPT2LMHeadModel, causal-lm, config sha256 1a2b3c4d5e6f)'."""
        head = {"file": self.id, "shipped": f"shipped model {self.id}"}.get(self.kind, f"{self.kind}:{self.id}")
        parts = [f"{self.library} {self.library_version}" if self.library else None, self.architecture, self.task]
        if self.config_sha256:
            parts.append(f"{'config' if self.library else 'file'} sha256 {self.config_sha256[:12]}")
        details = ", ".join(p for p in parts if p)
        return f"{head} ({details})" if details else head


class Profile(Strict):
    schema_version: int = SCHEMA_VERSION
    name: str
    model_file: str
    model_sha256: str
    created: str
    advisor_version: str
    torch_version: str
    device: str = Field(description="where it was profiled: meta, cpu or cuda")
    precision: str
    optimizer: str
    profiled_batch_sizes: list[int]
    batch_size: int
    input_shapes: list[str] = Field(description="shape and dtype of each input at the default batch size")
    tokens_per_sample: int | None = None
    global_batch: int | None = Field(
        None, ge=1, description="samples per optimizer step of the training recipe (the model file's GLOBAL_BATCH)"
    )
    global_batch_source: str | None = Field(None, description="where that recipe comes from (GLOBAL_BATCH_SOURCE)")
    linear_in_batch: bool
    linear_reason: str | None = None
    parameters: int
    trainable_parameters: int
    memory: Memory
    ops: list[OpRecord]
    uncounted_ops: list[str] = Field([], description="ops with no FLOP formula (recorded with flops 0)")
    view_ops: int = Field(0, description="view/alias calls per step: no kernel, no bytes, not listed in ops")
    timing: Timing | None = None
    structure: Structure | None = Field(None, description="repeated blocks, hidden size, attention heads")
    source: ModelSource | None = Field(None, description="what the model was built from (newer profiles)")
    notes: list[str] = []

    def made_from(self) -> str:
        """What the profile was made from, in words (older profiles name only their model file)."""
        if self.source is not None:
            return self.source.text()
        return f"{self.model_file} (file sha256 {self.model_sha256[:12]})"

    def _ops(self, phase: str | None) -> list[OpRecord]:
        return [o for o in self.ops if phase is None or o.phase == phase]

    def flops(self, batch: float, phase: str | None = None) -> float:
        return sum(o.flops.at(batch) for o in self._ops(phase))

    def bytes(self, batch: float, phase: str | None = None) -> float:
        return sum(o.bytes_read.at(batch) + o.bytes_written.at(batch) for o in self._ops(phase))


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


def load_profile(path: str | Path) -> Profile:
    """Read a profile YAML (safe loading), checking its schema version and fields."""
    from advisor.io import read_yaml

    path = Path(path)
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise UserError(f"{path}: not a profile (expected a mapping at the top level)", "regenerate it")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise UserError(
            f"{path}: profile schema_version {version!r}, this advisor reads version {SCHEMA_VERSION}",
            f"regenerate it with 'advisor profile {data.get('model_file', 'MODEL.py')}'",
        )
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
        raise UserError(f"{path}: invalid profile: {where}: {err['msg']}{more}", "regenerate it") from None


def save_profile(profile: Profile, path: str | Path) -> Path:
    from advisor.io import dump_yaml, write_atomic

    return write_atomic(Path(path), dump_yaml(profile), "profile")
