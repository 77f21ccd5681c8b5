"""The profile: what one training step of a model costs, independent of hardware. Saved as versioned YAML.

Every quantity that depends on the batch is a `Linear` (fixed + per_sample × batch), fitted from two
profiled batch sizes, so the estimator can ask for any batch size. `linear_in_batch` says whether the fit
is trustworthy (see advisor/profiler/linear.py for the test).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from advisor.errors import UserError
from advisor.vocab import (  # noqa: F401 - PHASES is re-exported
    PHASES,
    RECORDED_DTYPES,
    Category,
    ModelSourceKind,
    Phase,
    Precision,
    RecordLayout,
)

SCHEMA_VERSION = 1
LIMIT = 1e30  # no quantity of one training step comes near this: FLOPs, bytes, seconds
MAX_OPS = 100_000  # op records per profile (real models: a few hundred)
MAX_BATCH = 10_000_000

# Numbers a profile or an export may hold: finite, and within bounds no real value reaches.
Finite = Annotated[float, Field(ge=-LIMIT, le=LIMIT, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, le=LIMIT, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0, le=10**15)]
Batch = Annotated[int, Field(ge=1, le=MAX_BATCH)]
Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Text = Annotated[str, Field(max_length=10_000)]


def _known_dtype(name: str) -> str:
    if name not in RECORDED_DTYPES:
        raise ValueError(f"unknown dtype {name!r} (known: {', '.join(RECORDED_DTYPES[:8])}, ...)")
    return name


RecordedDtype = Annotated[str, AfterValidator(_known_dtype)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Linear(Strict):
    """A quantity that is `fixed + per_sample * batch`."""

    fixed: Finite = 0.0
    per_sample: Finite = 0.0

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

    op: str = Field(max_length=200, description="aten op, e.g. 'aten.mm'")
    phase: Phase
    category: Category
    dtype: RecordedDtype
    module: Text = Field(description="module path it ran under; repeated layers' indices are written '*'")
    count: int = Field(ge=1, le=10**9, description="calls per training step")
    flops: Linear
    bytes_read: Linear
    bytes_written: Linear
    shapes: Text = Field("", description="input shapes at the default batch size, for display")
    uncounted: bool = Field(False, description="no FLOP formula is known for this op: flops are 0")
    layout: RecordLayout | None = Field(
        None,
        description="'channels_last' when a convolution's input is NHWC in memory; 'strided' when an embedding "
        "gradient's incoming gradient or a LayerNorm's input is not contiguous (the kernel copies it first); "
        "'cpu_cast' for the conversion a CPU kernel makes of an input of another dtype than it computes in "
        "(costed on CPUs only); None for the default",
    )
    transposed: bool | None = Field(
        None, description="true for a transposed convolution (ConvTranspose), whose weight is [C_in, C_out/groups, *k]"
    )
    probability: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="a random draw's (aten.bernoulli_, aten.native_dropout) probability of a 1 (dropout's keep "
        "probability): a CPU kernel that branches on each draw pays more the nearer it is to one half; None for "
        "other ops and for draws with per-element probabilities",
    )
    copy_run: int | None = Field(
        None,
        ge=1,
        le=10**12,
        description="a copy between two layouts (aten.clone, aten.copy_ or aten._to_copy of a transposed or permuted "
        "tensor, or the copy a 'strided' record's kernel makes first): the elements it moves in each run contiguous "
        "on both sides (1 for a transpose of the innermost dimension, the head size for attention heads permuted); "
        "such a copy runs slower than a plain one of its bytes the shorter its runs. None for a copy within one "
        "layout and for other ops",
    )


class RnnCall(Strict):
    """One call of a recurrent layer (nn.LSTM, nn.GRU, nn.RNN) in the forward pass, as the device may run it:
    one fused kernel per layer (cuDNN, oneDNN) instead of the per-step ops a decomposition records."""

    module: str = Field(description="module path (pattern) of the layer: its ops in the profile carry it")
    mode: str = Field(description="LSTM, GRU, RNN_TANH or RNN_RELU")
    count: int = Field(ge=1, description="calls per step")
    steps: int = Field(ge=1, description="time steps per call")
    rows: Linear = Field(description="sequences per call (the batch dimension) at a micro-batch")
    input_size: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    proj_size: int = Field(0, ge=0)
    layers: int = Field(ge=1)
    directions: int = Field(ge=1, le=2)
    dtype: str


class NvmlInfo(Strict):
    name: str
    memory_total_bytes: NonNegative | None = None
    memory_used_bytes: NonNegative | None = None
    sm_count: Count | None = None
    sm_clock_max_mhz: NonNegative | None = None
    memory_clock_max_mhz: NonNegative | None = None
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
    parameter_bytes: NonNegative
    gradient_bytes: NonNegative
    optimizer_state_bytes: NonNegative
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
    measured_peak_bytes: NonNegative | None = Field(None, description="torch.cuda.max_memory_allocated (CUDA only)")
    nvml: NvmlInfo | None = None
    activation_parts: ActivationParts | None = Field(None, description="activation_bytes by where it was saved")
    step_fault_bytes: Linear | None = Field(
        None,
        description="memory a steady-state step of a fresh process faults in from the OS (glibc malloc returns "
        "freed blocks and the heap's top, and the next step touches them again): the mean over steady steps of "
        "fresh processes (advisor/profiler/faults.py), or for a model another process cannot rebuild its tensor "
        "allocations replayed through glibc's main arena (advisor/profiler/heap.py); CPU profiles on glibc only",
    )
    step_fault_shares: dict[Literal["forward", "backward", "optimizer"], Share] | None = Field(
        None, description="each phase's share of step_fault_bytes at the profile's batch (None: all in backward)"
    )


class Timing(Strict):
    device_name: str
    catalog_device: str | None = None
    batch_size: Batch
    warmup: Count
    repeats: Count
    step_time_s: NonNegative = Field(description="median of the timed steps")
    step_fastest_s: NonNegative | None = Field(None, description="the fastest timed step (absent in older profiles)")
    step_slowest_s: NonNegative | None = Field(None, description="the slowest timed step (absent in older profiles)")
    forward_s: NonNegative | None = None
    backward_s: NonNegative | None = None
    optimizer_s: NonNegative | None = None
    page_fault_bytes: NonNegative | None = Field(
        None,
        description="memory the OS had to fault in per timed step (median of minor page faults × page size; "
        "CPU runs on systems with getrusage): memory the allocator returned and took back, not in the estimate",
    )
    parallel_op_s: list[NonNegative] | None = Field(
        None,
        description="CPU, more than one thread: an add on 40,000 floats timed before and after the steps, the "
        "threads' fork-join cost (compared with the calibration's: a shared VM's threads change state)",
    )


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
    device: str = Field(max_length=100, description="where it was profiled: meta, cpu or cuda")
    precision: Precision
    optimizer: str = Field(max_length=100)
    profiled_batch_sizes: list[Batch] = Field(min_length=1, max_length=8)
    batch_size: Batch
    input_shapes: list[Text] = Field(description="shape and dtype of each input at the default batch size")
    tokens_per_sample: int | None = Field(None, ge=1, le=10**12)
    global_batch: int | None = Field(
        None,
        ge=1,
        le=10**12,
        description="samples per optimizer step of the training recipe (the model file's GLOBAL_BATCH)",
    )
    global_batch_source: str | None = Field(None, description="where that recipe comes from (GLOBAL_BATCH_SOURCE)")
    linear_in_batch: bool
    linear_reason: str | None = None
    parameters: Count
    trainable_parameters: Count
    memory: Memory
    ops: list[OpRecord] = Field(max_length=MAX_OPS)
    uncounted_ops: list[str] = Field([], description="ops with no FLOP formula (recorded with flops 0)")
    view_ops: int = Field(0, description="view/alias calls per step: no kernel, no bytes, not listed in ops")
    module_calls: int | None = Field(
        None, ge=0, description="nn.Module calls in one forward pass: eager Python work that no aten op shows"
    )
    rnns: list[RnnCall] = Field([], description="recurrent layers, for devices that run them as fused kernels")
    timing: Timing | None = None
    structure: Structure | None = Field(None, description="repeated blocks, hidden size, attention heads")
    source: ModelSource | None = Field(None, description="what the model was built from (newer profiles)")
    notes: list[str] = []

    @model_validator(mode="after")
    def _never_negative(self) -> Profile:
        """Every fitted quantity is at least 0 at the batch sizes it was measured at (a line through two
        measured points; only rounding may dip below). Between and beyond them a line may dip below 0 (a
        cost that grew faster than the batch): the estimator counts such an op as no work, never less."""
        lines = [(f"ops.{i}.{f}", getattr(o, f)) for i, o in enumerate(self.ops) for f in _OP_LINES]
        lines += [(f"memory.{f}", getattr(self.memory, f)) for f in _MEMORY_LINES]
        for where, line in lines:
            for b in self.profiled_batch_sizes:
                if line.at(b) < -1e-6 * (abs(line.fixed) + abs(line.per_sample) * b) - 1e-6:
                    raise ValueError(f"{where} is negative ({line.at(b):g}) at batch size {b}")
        if self.trainable_parameters > self.parameters:
            raise ValueError("trainable_parameters is more than parameters")
        return self

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


_OP_LINES = ("flops", "bytes_read", "bytes_written")
_MEMORY_LINES = ("activation_bytes", "checkpoint_bytes", "temporary_peak_bytes", "peak_bytes")


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


def load_profile(path: str | Path) -> Profile:
    """Read a profile YAML (safe loading), checking its schema version and fields."""
    from advisor.io import read_yaml

    path = Path(path)
    if path.suffix == ".py":  # a model file where a profile belongs: say what to run, not that it is bad YAML
        raise UserError(
            f"{path}: a model file, not a profile",
            f"profile it first ('advisor profile {str(path)[:200]} -o profile.yaml') and pass profile.yaml",
        )
    data = read_yaml(path, "profile")
    if not isinstance(data, dict):
        raise UserError(f"{path}: not a profile (expected a mapping at the top level)", "regenerate it")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise UserError(
            f"{path}: profile schema_version {short_repr(version)}, this advisor reads version {SCHEMA_VERSION}",
            f"regenerate it with 'advisor profile {str(data.get('model_file', 'MODEL.py'))[:200]}'",
        )
    ops = data.get("ops")
    if isinstance(ops, list) and len(ops) > MAX_OPS:  # before validating a million records one by one
        raise UserError(f"{path}: invalid profile: {len(ops):,} op records, more than {MAX_OPS:,}", "regenerate it")
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"{path}: invalid profile: {first_error(exc)}", "regenerate it") from None


def short_repr(value: object) -> str:
    """A value from a file, quoted as repr does, cut to a readable length (it may be 5,000 digits)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def first_error(exc: ValidationError) -> str:
    """'field ops.3.count: Input should be greater than or equal to 1 (and 2 more problems)'."""
    errors = exc.errors(include_url=False, include_input=False)
    err = errors[0]
    where = ".".join(str(p) for p in err["loc"])
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        message = "unknown field"
    more = f" (and {len(errors) - 1} more problem{'s' * (len(errors) > 2)})" if len(errors) > 1 else ""
    return (f"field {where}: " if where else "") + message + more


def save_profile(profile: Profile, path: str | Path) -> Path:
    from advisor.io import dump_yaml, write_atomic

    return write_atomic(Path(path), dump_yaml(profile), "profile")
