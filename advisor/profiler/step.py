"""One counted training step (forward, backward, optimizer) of a model file at one batch size."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from advisor.errors import UserError
from advisor.profiler.counter import UNCOUNTED, Counter, dtype_name, storage_key
from advisor.profiler.device import low_dtype, matmul_precision
from advisor.profiler.meta_modes import MetaMode
from advisor.profiler.model_file import ModelFile, call_user

DEFAULT_LOSS = "the mean of the model's output (its .loss, or ['loss'] when it has one), as fp32"


@dataclass
class StepResult:
    batch_size: int
    keys: list[tuple]
    calls: list[tuple[int, float, int, int]]
    view_ops: int
    module_calls: int
    rnns: list[tuple]
    parameters: int
    trainable: int
    parameter_bytes: int
    gradient_bytes: int
    optimizer_state_bytes: int
    activation_bytes: int
    checkpoint_bytes: int
    peak_bytes: int
    input_shapes: list[str]
    tokens_per_sample: int | None
    optimizer: str
    notes: list[str] = field(default_factory=list)
    saved_by: dict[tuple[str, str, int, bool], int] = field(default_factory=dict)
    block_input_bytes: int = 0
    hidden: int | None = None
    parameter_parts: dict[str, int] = field(default_factory=dict)
    model: Any = None
    batch: Any = None
    opt: Any = None


def tokens_per_sample(keys: dict, calls: list, batch_size: int, int_inputs: list) -> int | None:
    """The tokens one sample trains on: the width of the first [batch, seq] integer input, less what the
    model never embeds (a batch of [b, s+1] that the training step slices to s counts s): the indices per
    sample of the forward pass's [batch, ...] embedding lookups, summed (an encoder-decoder embeds source
    and target), cap it. None when neither is there (not a token model)."""
    lookups = {}  # key index -> indices per sample, for [batch, ...] embedding lookups of the forward pass
    for (op, shapes, _dtype, phase, *_), index in keys.items():
        if op == "aten.embedding" and phase == "forward" and len(shapes) > 1 and isinstance(shapes[1], tuple):
            if len(shapes[1]) >= 2:  # [batch, seq]: a lookup per token of every sample (not [seq] positions)
                lookups[index] = math.prod(shapes[1]) // batch_size
    looked_up = sum(lookups.get(call[0], 0) for call in calls)  # every call: a shared table looked up twice
    given = (int_inputs[0].numel() // int_inputs[0].shape[0]) if int_inputs else None
    if given and looked_up:
        return min(given, looked_up)
    return given or looked_up or None


def find_blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The repeated blocks activation checkpointing would wrap: the children of the ModuleList or Sequential
    with the most children of one class (at least 2); ties go to the first found."""
    best: list[torch.nn.Module] = []
    for m in model.modules():
        if isinstance(m, (torch.nn.ModuleList, torch.nn.Sequential)):
            kids = list(m.children())
            by_class: dict[type, list] = {}
            for k in kids:
                by_class.setdefault(type(k), []).append(k)
            same = max(by_class.values(), key=len, default=[])
            if len(same) >= 2 and len(same) > len(best):
                best = same
    return best


def make_optimizer(name: str, params, device: str) -> torch.optim.Optimizer:
    # The multi-tensor (_foreach) path that PyTorch picks by default on CUDA, on meta too (the profile stands
    # for a GPU run, and it is a few ops instead of ten per parameter); the per-tensor path on the CPU.
    foreach = device != "cpu"
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, foreach=foreach)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-4, foreach=foreach)
    return torch.optim.SGD(params, lr=1e-2, momentum=0.9, foreach=foreach)


def flat_tensors(batch: Any) -> list[tuple[str, torch.Tensor]]:
    if isinstance(batch, torch.Tensor):
        return [("input", batch)]
    if isinstance(batch, dict):
        return [(str(k), v) for k, v in batch.items() if isinstance(v, torch.Tensor)]
    return [(f"arg{i}", v) for i, v in enumerate(batch) if isinstance(v, torch.Tensor)]


def _to_device(batch: Any, device: str, pure_bf16: bool) -> Any:
    def move(t):
        if not isinstance(t, torch.Tensor):
            return t
        if pure_bf16 and t.is_floating_point():
            t = t.to(torch.bfloat16)
        return t if t.device.type == device else t.to(device)

    if isinstance(batch, dict):
        return {k: move(v) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return tuple(move(v) for v in batch)
    return move(batch)


def _loss_of(out: Any) -> torch.Tensor:
    if hasattr(out, "loss") and isinstance(out.loss, torch.Tensor):
        out = out.loss
    elif isinstance(out, dict) and isinstance(out.get("loss"), torch.Tensor):
        out = out["loss"]
    elif isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        out = out[0]
    if not isinstance(out, torch.Tensor):
        raise UserError(
            f"the model returned {type(out).__name__}, not a tensor",
            "define training_step(model, batch) -> loss in the model file",
        )
    return out.float().mean() if out.dim() else out.float()


def forward_loss(mf: ModelFile, model, batch) -> torch.Tensor:
    if mf.training_step is not None:
        loss = mf.training_step(model, batch)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise UserError(
                f"training_step in {mf.path.name} returned {type(loss).__name__}, not a scalar loss",
                "return the loss tensor",
            )
        return loss
    if isinstance(batch, dict):
        return _loss_of(model(**batch))
    if isinstance(batch, tuple):
        try:
            out = model(*batch)
        except TypeError as exc:
            if "forward()" in str(exc) and "positional argument" in str(exc):
                # the usual cause: (inputs, labels) from example_batch, both handed to forward()
                raise UserError(
                    f"the model's forward() does not take the {len(batch)} tensors example_batch() in "
                    f"{mf.path.name} returned, passed as positional arguments ({exc})",
                    "return only the inputs from example_batch(), or define training_step(model, batch) -> loss "
                    "to use labels, e.g. x, y = batch; return F.cross_entropy(model(x), y)",
                ) from None
            raise
        return _loss_of(out)
    return _loss_of(model(batch))


def build(mf: ModelFile, device: str, batch_size: int, precision: str, optimizer: str | None):
    path = mf.path
    torch.manual_seed(0)
    with torch.device(device):
        model = call_user(mf.build_model, path, "build_model()", device=device)
    if not isinstance(model, torch.nn.Module):
        raise UserError(
            f"build_model() in {path.name} returned {type(model).__name__}, not a torch.nn.Module",
            "return the model, e.g. return MyModel()",
        )
    model = model.to(device)
    if precision == "bf16":
        model = model.to(torch.bfloat16)
    model.train()
    with torch.device(device):
        batch = call_user(
            lambda: mf.example_batch(batch_size), path, f"example_batch({batch_size})", batch_size, device
        )
    if not isinstance(batch, (torch.Tensor, tuple, list, dict)):
        raise UserError(
            f"example_batch() in {path.name} returned {type(batch).__name__}",
            "return a Tensor, a tuple (positional arguments) or a dict (keyword arguments)",
        )
    batch = _to_device(batch, device, precision == "bf16")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise UserError(
            f"build_model() in {path.name} returned a model with no trainable parameters: there is nothing to train",
            "return the model you train (its parameters must require grad)",
        )
    if mf.make_optimizer is not None and optimizer is None:
        opt = call_user(lambda: mf.make_optimizer(params), path, "make_optimizer()")
        if not isinstance(opt, torch.optim.Optimizer):
            raise UserError(
                f"make_optimizer() in {path.name} returned {type(opt).__name__}, not a torch.optim.Optimizer",
                "return one built on the parameters it is given, e.g. torch.optim.AdamW(parameters)",
            )
        name = type(opt).__name__.lower()
    else:
        name = optimizer or "adamw"
        opt = make_optimizer(name, params, device)
    return model, batch, opt, name


def parameter_parts(model: torch.nn.Module, where: dict[str, str]) -> dict[str, int]:
    """Parameters by where their module first ran (before, inside or after the repeated blocks) and whether a
    tensor-parallel layout splits them: matrices (linear and embedding weights) are split, vectors (norms,
    biases) replicated. Modules that never ran count as before the blocks."""
    from advisor.profiler.counter import pattern

    parts: dict[str, int] = {}
    seen: set[int] = set()
    for name, module in model.named_modules():
        for p in module.parameters(recurse=False):
            if id(p) in seen:
                continue
            seen.add(id(p))
            key = f"{where.get(pattern(name), 'before')}_{'sharded' if p.dim() >= 2 else 'replicated'}"
            parts[key] = parts.get(key, 0) + p.numel()
    return parts


def _unique_bytes(tensors) -> int:
    seen, total = set(), 0
    for t in tensors:
        if isinstance(t, torch.Tensor):
            k = storage_key(t)
            if k not in seen:
                seen.add(k)
                total += t.untyped_storage().nbytes()
    return total


def train_step(mf: ModelFile, model, batch, opt, device: str, low=None, phase=None) -> None:
    """One eager training step as a user's loop runs it: zero the gradients, the forward pass and loss (under
    autocast to `low` where set), backward, the optimizer step. `phase(name)`, where given, is a context manager
    entered around each of the three phases ("forward", "backward", "optimizer"): a `PhaseClock`, a heap trace."""
    around = phase or (lambda _name: contextlib.nullcontext())
    opt.zero_grad(set_to_none=True)
    autocast = torch.autocast(device_type=device, dtype=low) if low is not None else contextlib.nullcontext()
    with around("forward"), autocast:
        loss = forward_loss(mf, model, batch)
    with around("backward"):
        loss.backward()
    with around("optimizer"):
        opt.step()


class PhaseClock:
    """Seconds of each phase of the last `train_step`, on `clock`, with the device synchronized at both ends of a
    phase (CUDA runs asynchronously)."""

    def __init__(self, clock: Callable[[], float], device: str):
        self.clock, self.cuda, self.seconds = clock, device == "cuda", {}

    def _sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    @contextlib.contextmanager
    def __call__(self, name: str):
        self._sync()
        start = self.clock()
        yield
        self._sync()
        self.seconds[name] = self.clock() - start

    def phases(self) -> tuple[float, float, float]:
        return self.seconds["forward"], self.seconds["backward"], self.seconds["optimizer"]


def run_step(
    mf: ModelFile,
    device: str,
    batch_size: int,
    precision: str,
    optimizer: str | None,
    tick: Callable[[str], None] = lambda s: None,
) -> StepResult:
    model, batch, opt, opt_name = build(mf, device, batch_size, precision, optimizer)
    inputs = flat_tensors(batch)
    pre = list(model.parameters()) + list(model.buffers()) + [t for _, t in inputs]
    blocks = find_blocks(model)
    counter = Counter(model, blocks, precision == "tf32", pre)
    low = low_dtype(precision)
    if device == "meta":
        forward_ctx = MetaMode(low)
    elif low is not None:
        forward_ctx = torch.autocast(device_type=device, dtype=low)
    else:
        forward_ctx = contextlib.nullcontext()
    what = f"the forward pass on the batch from example_batch({batch_size})"
    with matmul_precision(precision, device), counter:
        tick("forward")
        with forward_ctx:
            loss = call_user(lambda: forward_loss(mf, model, batch), mf.path, what, batch_size, device)
        counter.flush()
        if not loss.requires_grad:
            raise UserError(
                "the loss does not require grad: no parameter takes part in it",
                "check that build_model() returns the trained model and the loss uses its output",
            )
        tick("backward")
        counter.phase = "backward"
        call_user(loss.backward, mf.path, "the backward pass", batch_size, device)
        tick("optimizer")
        # The first step creates the optimizer's state (SGD's momentum buffer as a copy of the gradient, Adam's
        # zeroed moments) and runs other ops than every later one (SGD: a clone where later steps scale and add);
        # it runs uncounted, and the step recorded is the second, the steady state a training run repeats.
        counter.phase = UNCOUNTED
        call_user(opt.step, mf.path, "the optimizer step", batch_size, device)
        counter.phase = "optimizer"
        call_user(opt.step, mf.path, "the optimizer step", batch_size, device)
        del loss
    trainable = [p for p in model.parameters() if p.requires_grad]
    state = [t for s in opt.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
    mem = counter.mem
    block_max = max(mem.block_saved.values(), default=0)
    checkpoint = mem.block_inputs + mem.saved_outside_blocks + block_max if blocks else mem.saved
    ints = [t for _, t in inputs if not t.is_floating_point() and t.dtype != torch.bool and t.dim() >= 2]
    notes = []
    if not blocks:
        notes.append("no repeated blocks found: checkpoint_bytes equals activation_bytes")
    return StepResult(
        batch_size=batch_size,
        keys=list(counter.keys),
        calls=counter.calls,
        view_ops=counter.view_ops,
        module_calls=counter.module_calls,
        rnns=counter.rnns,
        parameters=sum(p.numel() for p in model.parameters()),
        trainable=sum(p.numel() for p in trainable),
        parameter_bytes=_unique_bytes(model.parameters()),
        gradient_bytes=_unique_bytes(p.grad for p in trainable if p.grad is not None),
        optimizer_state_bytes=_unique_bytes(state),
        activation_bytes=mem.saved,
        checkpoint_bytes=checkpoint,
        # a steady-state step: the optimizer state, created by the uncounted first step, is already resident
        # during the next steps' forward and backward
        peak_bytes=max(mem.peak, mem.peak_before_optimizer + _unique_bytes(state)),
        input_shapes=[f"{n}: [{', '.join(map(str, t.shape))}] {dtype_name(t.dtype)}" for n, t in inputs],
        tokens_per_sample=tokens_per_sample(counter.keys, counter.calls, batch_size, ints),
        optimizer=opt_name,
        notes=notes,
        saved_by=dict(mem.saved_by),
        block_input_bytes=mem.block_inputs,
        hidden=mem.block_input_width,
        parameter_parts=parameter_parts(model, counter.where) if blocks else {},
        model=model,
        batch=batch,
        opt=opt,
    )
