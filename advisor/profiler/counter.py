"""The counter: a TorchDispatchMode that sees every aten op of a training step and records its cost.

Per call it records FLOPs (registry formula), bytes read and written (from the tensors themselves), dtype,
phase and the module it ran under (aggregation into records happens in profile.py). Alongside it tracks memory:
live tensors (by storage, with weak references, so it works on meta too), the peak, and the tensors autograd
saves for backward (deduplicated by storage), each by where it was saved: before the repeated blocks, inside
one, or after them, its module, its innermost dimension and whether it is an attention score (what the
parallel layouts divide and selective recomputation drops).

Module attribution: a global module pre/post hook keeps the stack of module paths in the forward pass; each
forward op's autograd node is tagged with the path, and in backward the currently running node
(`torch._C._current_autograd_node()`) gives it back. Repeated layers' indices become '*', so the 80 layers
of a 70B model aggregate into one set of records.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from advisor.profiler.registry import Call, Entry, lookup
from advisor.vocab import CPU_CAST, EMBEDDING_GRADS

DTYPES = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float64: "fp64",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int16: "int16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
    torch.complex64: "complex64",
    torch.complex128: "complex128",
}
for _name in ("float8_e4m3fn", "float8_e5m2"):
    if hasattr(torch, _name):
        DTYPES[getattr(torch, _name)] = "fp8_" + _name.split("_")[1].removesuffix("fn")
# Ops that only make a new view or alias of existing memory: no kernel, no bytes.
# Gathers read only the rows they pick, not the whole table: bytes read = the indices + what is written.
GATHERS = {"aten.embedding", "aten.index_select", "aten.gather", "aten.index", "aten._unsafe_index"}
# Bag lookups (EmbeddingBag) read each picked row and reduce the rows of a bag into one output row: bytes read =
# the indices, offsets and weights + one table row per index (a table of 50,000 rows looked up 1,024 times reads
# 1,024 rows, not 50,000).
BAG_GATHERS = {"aten._embedding_bag", "aten._embedding_bag_forward_only"}  # aten.embedding_bag decomposes to these
# Ops whose kernels depend on the memory layout of their input (cuDNN runs tensor-core convolutions in NHWC).
LAYOUT_OPS = {"aten.convolution", "aten.convolution_backward", "aten._convolution"}
# Ops that copy a non-contiguous input to a contiguous one before their kernel runs, by the position of that input:
# the embedding gradient of a column slice, as cat's backward hands it on (PyTorch's kernels call grad.contiguous()
# in Embedding.cu and EmbeddingBag.cu, and on the CPU), and LayerNorm over a permuted tensor (the NHWC view of an
# NCHW activation, as ConvNeXt-style blocks normalize channels: layer_norm_cpu and its backward take
# input.expect_contiguous(), and so do the CUDA kernels). The profile's shapes are the copy's.
CONTIGUOUS_OPS = {
    **dict.fromkeys(EMBEDDING_GRADS, 0),
    "aten.native_layer_norm": 0,
    "aten.native_layer_norm_backward": 1,
}
# Ops whose CPU kernels first convert every input of another dtype than the op computes in (PyTorch's
# TensorIterator on a CPU: `input.to(common_dtype)` for each such input; a reduction of bools converts them to int64
# first): a mask multiplied into a gradient (amax's and max's backward), a bool mask summed. CUDA kernels cast as they
# load and copy nothing. Comparisons compute in their inputs' promoted dtype, the rest in their output's.
PROMOTING = {"aten.add", "aten.sub", "aten.rsub", "aten.mul", "aten.div", "aten.maximum", "aten.minimum"}
PROMOTING |= {name + "_" for name in PROMOTING if name != "aten.rsub"} | {"aten.sum", "aten.mean"}
COMPARISONS = {"aten.eq", "aten.ne", "aten.lt", "aten.le", "aten.gt", "aten.ge"}
RNN_MODES = {"LSTM", "GRU", "RNN_TANH", "RNN_RELU"}
FREE_OPS = {"aten._unsafe_view", "aten.lift_fresh", "aten.alias", "aten.detach", "aten._reshape_alias"}
# Ops that only allocate: their memory counts, but no kernel runs and no byte moves.
ALLOCATIONS = {"aten.empty", "aten.empty_like", "aten.empty_strided", "aten.new_empty", "aten.new_empty_strided"}
# Ops whose saved output, when its last two dimensions are equal, is an attention score matrix (probabilities
# and their dropout mask): what selective recomputation of the attention core does not keep.
SCORE_OPS = {"aten._softmax", "aten.softmax", "aten._safe_softmax", "aten.native_dropout", "aten._masked_softmax"}
# Random draws whose cost on a CPU depends on their probability (OpRecord.probability), by how the probability of
# drawing a 1 comes from the call: bernoulli_'s p (a float; a tensor of probabilities is not recorded), and one
# less dropout's p for native_dropout (the probability of keeping an element).
DRAWS = {
    "aten.bernoulli_": lambda c: float(p) if isinstance(p := c.given("p"), (int, float)) else None,
    "aten.native_dropout": lambda c: 1.0 - float(p) if isinstance(p := c.given("p"), (int, float)) else None,
}


def dtype_name(dtype: torch.dtype) -> str:
    return DTYPES.get(dtype, str(dtype).removeprefix("torch."))


def storage_key(t: torch.Tensor) -> int:
    return t.untyped_storage()._cdata


def span_bytes(t: torch.Tensor) -> int:
    """Bytes a kernel must read for `t`: its elements, or fewer when it is a broadcast (stride-0) view."""
    if t.is_contiguous():
        return t.numel() * t.element_size()
    if t.numel() == 0:
        return 0
    span = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True) if s > 1)
    return min(span, t.numel()) * t.element_size()


# Ops that copy one tensor into another: when the two lay their elements out differently (a transposed or permuted
# view made contiguous), the kernel reads or writes in short runs (OpRecord.copy_run), by position of (source,
# destination) among the inputs, None for the output.
COPIES = {"aten.clone": (0, None), "aten._to_copy": (0, None), "aten.copy_": (1, 0)}


def copy_run(shape, source, target) -> int | None:
    """Elements a copy moves in each run that is contiguous in both its `source` and its `target` strides over
    `shape` (innermost first, by the target's order), where the two layouts differ: 1 for a transposing copy, the
    head size for an attention's heads permuted; None for the same layout, a broadcast source (stride 0) or a
    single element."""
    if len(source) != len(shape) or len(target) != len(shape) or tuple(source) == tuple(target):
        return None
    dims = [d for d in range(len(shape)) if shape[d] > 1]
    if not dims or any(source[d] == 0 for d in dims):
        return None
    run = 1
    for d in sorted(dims, key=lambda d: target[d]):
        if source[d] != run or target[d] != run:
            break
        run *= shape[d]
    return run if run < math.prod(shape[d] for d in dims) else None


def contiguous_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def pattern(path: str) -> str:
    return ".".join("*" if p.isdigit() else p for p in path.split(".")) if path else ""


@dataclass
class _OpInfo:
    name: str
    entry: Entry | None
    free: bool


@dataclass
class Memory:
    baseline: int = 0  # parameters, buffers and inputs, alive before the step
    live: int = 0
    peak: int = 0
    peak_before_optimizer: int = 0  # the peak of the forward and backward phases
    saved: int = 0  # saved for backward, deduplicated
    saved_outside_blocks: int = 0
    block_inputs: int = 0
    block_saved: dict[int, int] = field(default_factory=dict)
    # saved bytes by (where: before|block|after, module pattern, innermost dimension, attention score?)
    saved_by: dict[tuple[str, str, int, bool], int] = field(default_factory=dict)
    block_input_width: int | None = None  # the innermost dimension of the first block's input (hidden size)


UNCOUNTED = "uncounted"  # a phase whose ops run but are not recorded (the optimizer's state-creating first step)


class Counter(TorchDispatchMode):
    """Use as a context manager around one training step; set `.phase` before each phase."""

    def __init__(
        self,
        model: torch.nn.Module | None = None,
        blocks: list[torch.nn.Module] = (),
        tf32: bool = False,
        preexisting: list = (),
    ):
        super().__init__()
        model = model if model is not None else torch.nn.Module()
        self.phase = "forward"
        self.tf32 = tf32
        self.keys: dict[tuple, int] = {}  # (op, shapes, dtype, phase, module, category, uncounted, layout,
        # transposed, probability) -> index
        self.calls: list[tuple[int, float, int, int]] = []  # per call: key index, flops, bytes read, written
        self.view_ops = 0
        self.module_calls = 0  # nn.Module calls in the forward pass: Python work no aten op shows
        self.rnns: list[tuple] = []  # (module pattern, mode, steps, rows, input, hidden, proj, layers, directions)
        self.mem = Memory()
        self._names = {id(m): n for n, m in model.named_modules()}
        self._blocks = {id(b) for b in blocks}
        self._stack: list[str] = [""]
        self._block: int | None = None
        self._blocks_started = False
        self.where: dict[str, str] = {}  # module pattern -> before | block | after (its first forward call)
        self._producer: dict[int, str] = {}  # storage -> the op that wrote it last
        self._nodes: dict = {}
        self._pending: list = []
        self._storages: dict[int, list[int]] = {}  # key -> [references, bytes]
        self._seen_saved: set[int] = set()
        self._info: dict = {}
        self._param_keys = {storage_key(p) for p in model.parameters()}
        self._pre = set()
        for t in preexisting:
            k = storage_key(t)
            if k not in self._pre:
                self._pre.add(k)
                self.mem.baseline += t.untyped_storage().nbytes()
        self.mem.peak = self.mem.peak_before_optimizer = self.mem.baseline
        self._handles: list = []

    # ---- context ----
    def __enter__(self):
        mods = torch.nn.modules.module
        self._handles = [
            mods.register_module_forward_pre_hook(self._pre_hook),
            mods.register_module_forward_hook(self._post_hook),
        ]
        self._saved = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._saved.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        self.flush()
        self._saved.__exit__(*exc)
        for h in self._handles:
            h.remove()
        return super().__exit__(*exc)

    def flush(self) -> None:
        for t, path in self._pending:
            node = t.grad_fn
            if node is not None and node not in self._nodes:
                self._nodes[node] = path
        self._pending.clear()

    # ---- modules ----
    def _pre_hook(self, module, inputs):
        if self.phase != "forward":
            return
        self.module_calls += 1
        name = self._names.get(id(module), type(module).__name__)
        self._stack.append(pattern(name))
        if isinstance(module, torch.nn.RNNBase):
            self._rnn(module, inputs)
        if id(module) in self._blocks and self._block is None:
            self._block = id(module)
            self._blocks_started = True
            tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
            self.mem.block_inputs += sum(span_bytes(t) for t in tensors)
            if self.mem.block_input_width is None and tensors and tensors[0].dim():
                self.mem.block_input_width = int(tensors[0].shape[-1])
        self.where.setdefault(self._stack[-1], self._position())

    def _position(self) -> str:
        if self._block is not None:
            return "block"
        return "after" if self._blocks_started else "before"

    def _rnn(self, module: torch.nn.RNNBase, inputs) -> None:
        """Note a recurrent layer's call: the device may run it as one fused kernel (cuDNN, oneDNN) instead of
        the per-step ops the meta device decomposes it into."""
        x = inputs[0] if inputs else None
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or module.mode not in RNN_MODES:
            return  # packed sequences and unbatched input: costed by their ops
        steps, rows = (x.shape[1], x.shape[0]) if module.batch_first else (x.shape[0], x.shape[1])
        self.rnns.append(
            (
                self._stack[-1],
                module.mode,
                int(steps),
                int(rows),
                module.input_size,
                module.hidden_size,
                getattr(module, "proj_size", 0),
                module.num_layers,
                2 if module.bidirectional else 1,
                dtype_name(x.dtype),
            )
        )

    def _post_hook(self, module, inputs, output):
        if self.phase != "forward" or len(self._stack) < 2:
            return
        self.flush()
        self._stack.pop()
        if self._block == id(module):
            self._block = None

    def _pack(self, t: torch.Tensor):
        key = storage_key(t)
        if key in self._param_keys or key in self._seen_saved:
            return t
        self._seen_saved.add(key)
        nbytes = t.untyped_storage().nbytes()
        self.mem.saved += nbytes
        if self._block is None:
            self.mem.saved_outside_blocks += nbytes
        else:
            self.mem.block_saved[self._block] = self.mem.block_saved.get(self._block, 0) + nbytes
        width = int(t.shape[-1]) if t.dim() else 1
        score = t.dim() >= 3 and t.shape[-1] == t.shape[-2] and self._producer.get(key) in SCORE_OPS
        where = (self._position(), self._stack[-1], width, bool(score))
        self.mem.saved_by[where] = self.mem.saved_by.get(where, 0) + nbytes
        return t

    # ---- memory ----
    def _track(self, t: torch.Tensor) -> None:
        key = storage_key(t)
        if key in self._pre:
            return
        ref = self._storages.get(key)
        if ref is None:
            nbytes = t.untyped_storage().nbytes()
            self._storages[key] = [1, nbytes]
            self.mem.live += nbytes
            total = self.mem.baseline + self.mem.live
            if total > self.mem.peak:
                self.mem.peak = total
            if self.phase != "optimizer" and total > self.mem.peak_before_optimizer:
                self.mem.peak_before_optimizer = total
        else:
            ref[0] += 1
        weakref.finalize(t, self._release, key)

    def _release(self, key: int) -> None:
        ref = self._storages.get(key)
        if ref is not None:
            ref[0] -= 1
            if ref[0] == 0:
                self.mem.live -= ref[1]
                del self._storages[key]

    # ---- ops ----
    def _op_info(self, func) -> _OpInfo:
        info = self._info.get(func)
        if info is None:
            name = str(func.overloadpacket)
            free = bool(getattr(func, "is_view", False)) or name in FREE_OPS
            info = self._info[func] = _OpInfo(name, lookup(name), free)
        return info

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.phase == UNCOUNTED:
            return out
        if self._pending:
            self.flush()
        info = self._op_info(func)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        outs = [o for o in outs if isinstance(o, torch.Tensor)]
        if self.phase == "forward" and outs:
            self._pending.append((outs[0], self._stack[-1]))
        if info.free or not info.name.startswith("aten."):  # views and profiler markers: no kernel
            self.view_ops += 1
            return out
        if info.name in ALLOCATIONS:  # memory, no kernel
            for o in outs:
                self._track(o)
            return out
        shapes, read, first_in = [], 0, None
        for a in (*args, *kwargs.values()):
            if isinstance(a, torch.Tensor):
                shapes.append(tuple(a.shape))
                read += span_bytes(a)
                first_in = first_in if first_in is not None else a
            elif isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
                ts = [x for x in a if isinstance(x, torch.Tensor)]
                shapes.append(("list", len(ts), sum(x.numel() for x in ts)))
                read += sum(span_bytes(x) for x in ts)
                first_in = first_in if first_in is not None else ts[0]
        if info.name in PROMOTING or info.name in COMPARISONS:
            self._casts(info.name, args, kwargs, outs)
        written = 0
        for o in outs:
            written += o.numel() * o.element_size()
            self._track(o)
            if self.phase == "forward":
                self._producer[storage_key(o)] = info.name
        if info.name in GATHERS:
            read = written + sum(span_bytes(a) for a in args[1:] if isinstance(a, torch.Tensor))
        elif info.name in BAG_GATHERS and len(args) > 1 and isinstance(args[1], torch.Tensor):
            row = args[0].shape[-1] * args[0].element_size()  # one table row
            read = args[1].numel() * row + sum(span_bytes(a) for a in args[1:] if isinstance(a, torch.Tensor))
        if not outs and info.name.startswith("aten._foreach") and args and isinstance(args[0], (list, tuple)):
            written = sum(x.numel() * x.element_size() for x in args[0] if isinstance(x, torch.Tensor))
        entry = info.entry
        call = Call(func, args, kwargs, out)
        flops = entry.fn(call) if entry is not None else 0.0
        category = entry.category if entry is not None else "memory"
        ref = next((t for t in outs if t.is_floating_point()), None)
        if ref is None:
            ref = first_in if first_in is not None else (outs[0] if outs else None)
        dtype = dtype_name(ref.dtype) if ref is not None else "none"
        if category == "matrix" and dtype == "fp32" and self.tf32:
            dtype = "tf32"
        layout = ""
        if info.name in LAYOUT_OPS:  # cuDNN picks NHWC kernels when the input or the weight is channels-last
            first = 1 if info.name == "aten.convolution_backward" else 0
            for x in args[first : first + 2]:
                if isinstance(x, torch.Tensor) and x.dim() in (4, 5) and not x.is_contiguous():
                    fmt = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
                    layout = "channels_last" if x.is_contiguous(memory_format=fmt) else layout
        run = None
        if info.name in CONTIGUOUS_OPS and len(args) > CONTIGUOUS_OPS[info.name]:
            x = args[CONTIGUOUS_OPS[info.name]]
            layout = "strided" if isinstance(x, torch.Tensor) and not x.is_contiguous() else ""
            if layout:
                run = copy_run(x.shape, x.stride(), contiguous_strides(x.shape))
        elif info.name in COPIES:
            src, dst = COPIES[info.name]
            pair = (args[src] if len(args) > src else None, out if dst is None else args[dst])
            if all(isinstance(t, torch.Tensor) for t in pair) and pair[0].shape == pair[1].shape:
                run = copy_run(pair[1].shape, pair[0].stride(), pair[1].stride())
        # a transposed convolution runs other kernels than a plain one of its FLOPs (oneDNN: a backward-data pass)
        transposed = info.name in LAYOUT_OPS and bool(call.arg("transposed", False))
        draw = DRAWS.get(info.name)
        probability = draw(call) if draw else None
        key = (info.name, tuple(shapes), dtype, self.phase, self._module(), category, entry is None, layout, transposed,
               probability, run)  # fmt: skip
        self._call(key, flops, read, written)
        return out

    def _call(self, key: tuple, flops: float, read: int, written: int) -> None:
        """One call of the record `key` (a new record's index is the next free one)."""
        self.calls.append((self.keys.setdefault(key, len(self.keys)), flops, read, written))

    def _casts(self, name: str, args, kwargs, outs) -> None:
        """Records the conversions a CPU kernel of `name` (PROMOTING, COMPARISONS) makes of its inputs of another
        dtype than the one it computes in, as aten._to_copy calls with the layout CPU_CAST: each reads the input and
        writes it in the common dtype, and the op then reads the converted copy, which its own record counts at the
        input's dtype; so a cast's record reads and writes the converted size (n x the common dtype's bytes) each.
        Single elements (scalars, 0-dim tensors) are left out: they are converted as the kernel loads them."""
        ins = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        if name in COMPARISONS:
            common = torch.result_type(ins[0], ins[1]) if len(ins) == 2 else None
        else:
            common = outs[0].dtype if outs else None
        if common is None:
            return
        size = common.itemsize
        for a in ins:
            if a.dtype != common and a.numel() > 1:
                key = ("aten._to_copy", (tuple(a.shape),), dtype_name(common), self.phase, self._module(), "memory",
                       False, CPU_CAST, False, None, None)  # fmt: skip
                self._call(key, 0.0, a.numel() * size, a.numel() * size)

    def _module(self) -> str:
        if self.phase == "forward":
            return self._stack[-1]
        if self.phase == "backward":
            node = torch._C._current_autograd_node()
            return self._nodes.get(node, "") if node is not None else ""
        return "optimizer"
