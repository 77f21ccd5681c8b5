"""The shared words of advisor: dtypes, precisions, device kinds, phases, strategies, optimizers.

Every module that names one of these imports it from here, so a new precision or dtype is added in one
place. Each tuple is the canonical spelling and order; the `Literal` beside it is derived from it for
pydantic fields. Nothing here imports torch.
"""

from __future__ import annotations

import difflib
from typing import Literal

from advisor.errors import UserError

# ---- dtypes: what a unit computes in (catalog peaks are given per dtype) ----
DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int8")
Dtype = Literal[DTYPES]
FLOAT_DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "fp4")
DTYPE_BYTES: dict[str, float] = {
    "fp64": 8,
    "fp32": 4,
    "tf32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "fp4": 0.5,
    "int8": 1,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "uint8": 1,
    "bool": 1,
}
# Spellings the profiler records (from torch dtypes) that compute as a catalog dtype.
_DTYPE_ALIASES = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "fp8_e4m3fnuz": "fp8", "fp8_e5m2fnuz": "fp8"}


# Every dtype spelling a profile's op record may carry: the profiler's names of torch's dtypes (the catalog
# dtypes, fp8 variants, integers, bool, complex and quantized types; only the first have catalog peaks).
RECORDED_DTYPES: tuple[str, ...] = (
    *DTYPES,
    *_DTYPE_ALIASES,
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn_x2",
    *(f"{u}int{n}" for u in ("", "u") for n in (1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64) if f"{u}int{n}" != "int8"),
    "bool",
    "complex32",
    "complex64",
    "complex128",
    "qint8",
    "qint32",
    "quint8",
    "quint4x2",
    "quint2x4",
    "bits1x8",
    "bits2x4",
    "bits4x2",
    "bits8",
    "bits16",
)


def canonical_dtype(name: str) -> str:
    """The catalog dtype an op's recorded dtype computes in ('fp8_e4m3' -> 'fp8'); other names unchanged
    (integer and bool dtypes have no catalog peak: the roofline runs them on the fp32 vector units)."""
    return _DTYPE_ALIASES.get(name, name)


# ---- precisions: how a training run uses dtypes ----
PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "bf16-mixed", "fp16-mixed", "bf16", "fp8-mixed")
Precision = Literal[PRECISIONS]
# The dtype matrix-unit ops compute in under each precision. fp8-mixed is bf16-mixed whose repeated blocks'
# weight matmuls run on the FP8 tensor units (Transformer-Engine style): see BLOCK_MATMUL_DTYPE.
COMPUTE_DTYPE: dict[str, str] = {
    "fp32": "fp32",
    "tf32": "tf32",
    "bf16-mixed": "bf16",
    "fp16-mixed": "fp16",
    "bf16": "bf16",
    "fp8-mixed": "bf16",
}
# Precisions whose repeated blocks' weight matmuls compute in another dtype than COMPUTE_DTYPE.
BLOCK_MATMUL_DTYPE: dict[str, str] = {"fp8-mixed": "fp8"}
# Bytes per parameter for weights, gradients and optimizer state. Mixed precision keeps fp32 weights and
# gradients (autocast casts on the fly); pure bf16 keeps everything in bf16.
PARAM_BYTES: dict[str, float] = {"fp32": 4, "tf32": 4, "bf16-mixed": 4, "fp16-mixed": 4, "bf16": 2, "fp8-mixed": 4}

# ---- hardware ----
DEVICE_KINDS: tuple[str, ...] = ("cpu", "gpu", "tpu", "accelerator")
DeviceKind = Literal[DEVICE_KINDS]
# The software a device's PyTorch runs on: it decides how a launched job is set up (CUDA wheels, ROCm
# wheels, torch_xla, the Neuron SDK, Habana's, Ascend's CANN with torch_npu).
SOFTWARE_STACKS: tuple[str, ...] = ("cuda", "rocm", "xla", "neuron", "habana", "cann", "cpu")
SoftwareStack = Literal[SOFTWARE_STACKS]

# Kinds of workload, for the estimator's error bands (validation results are kept per kind).
WORKLOAD_KINDS: tuple[str, ...] = ("cnn", "transformer", "rnn", "recommender", "mlp", "any")
WorkloadKind = Literal[WORKLOAD_KINDS]

# ---- a training step ----
PHASES: tuple[str, ...] = ("forward", "backward", "optimizer")
# the three GEMMs of a linear layer: forward x·Wᵀ, input gradient g·W, weight gradient gᵀ·x (calibrated apart)
GEMM_LAYOUTS: tuple[str, ...] = ("forward", "input_grad", "weight_grad")
GemmLayout = Literal[GEMM_LAYOUTS]
DEPTHWISE = "depthwise"  # the kernel variant of a depthwise convolution (one input channel a group), calibrated apart
TRANSPOSED = "transposed"  # the kernel variant of a transposed convolution (ConvTranspose), calibrated apart
# oneDNN's reorders of a plain convolution's activations into its channel-blocked layout and back, by whether the
# channel count is on the block or padded up to it (calibration/kernels.reorder_layers, estimator/kernels.py)
CONV_REORDERS: tuple[str, ...] = ("aligned", "padded")
ConvReorder = Literal[CONV_REORDERS]
Phase = Literal[PHASES]
CATEGORIES: tuple[str, ...] = ("matrix", "vector", "memory")
Category = Literal[CATEGORIES]
# Gradients of table lookups (embedding, embedding bag): each zeroes a table of the weight's size and scatter-adds
# the looked-up rows into it, after making its incoming gradient contiguous. The profiler marks a strided one, the
# calibration times them apart and the estimator prices them so (estimator/roofline.py, kernels.py).
EMBEDDING_GRADS: tuple[str, ...] = (
    "aten.embedding_dense_backward",
    "aten._embedding_bag_backward",
    "aten._embedding_bag_dense_backward",
)
# The layout of a profile record for a dtype conversion that CPU kernels make before an op whose inputs differ in
# dtype (PyTorch's TensorIterator converts each such input first; CUDA kernels cast as they load): the profiler
# records it, the estimator costs it on CPUs and leaves it out elsewhere (profiler/counter.py; estimator/roofline.py
# and passes.py).
CPU_CAST = "cpu_cast"
# What a profile record's layout may say (profiler/schema.OpRecord.layout): an NHWC convolution, an input the kernel
# makes contiguous first, a CPU kernel's dtype conversion.
RECORD_LAYOUTS: tuple[str, ...] = ("channels_last", "strided", CPU_CAST)
RecordLayout = Literal[RECORD_LAYOUTS]
# Random draws whose CPU kernels branch on each draw, so their cost depends on the probability (the profile records
# it, the calibration measures each at one half, the estimator scales its curve: estimator/kernels.draw_factor).
DRAW_OPS: tuple[str, ...] = ("aten.bernoulli_", "aten.native_dropout")
DrawOp = Literal[DRAW_OPS]
# How the data-parallel dimension holds the model: `single` (no data parallelism), `ddp` (replicas), ZeRO stage 1
# (optimizer state sharded), stage 2 (and gradients), `fsdp` (ZeRO-3: and weights).
STRATEGIES: tuple[str, ...] = ("single", "ddp", "zero1", "zero2", "fsdp")
Strategy = Literal[STRATEGIES]
# The same as a layout's `sharding`: what the data-parallel ranks shard (`none`: DDP replicas, or no data
# parallelism at all).
SHARDINGS: tuple[str, ...] = ("none", "zero1", "zero2", "fsdp")
Sharding = Literal[SHARDINGS]
STRATEGY_SHARDING: dict[str, str] = {
    "single": "none",
    "ddp": "none",
    "zero1": "zero1",
    "zero2": "zero2",
    "fsdp": "fsdp",
}
# Activation recomputation: none, `selective` (the attention core only, as Megatron-LM does), `full` (every
# repeated block keeps only its input and is run forward again in the backward pass).
RECOMPUTES: tuple[str, ...] = ("none", "selective", "full")
Recompute = Literal[RECOMPUTES]
OPTIMIZERS: tuple[str, ...] = ("adamw", "adam", "sgd")
# Optimizer state tensors per parameter (Adam's m and v; SGD's momentum).
OPTIMIZER_STATES: dict[str, int] = {"adamw": 2, "adam": 2, "sgd": 1}
# Where a model is profiled: the local GPU or CPU (auto picks), or meta (counts without memory).
PROFILE_DEVICES: tuple[str, ...] = ("auto", "cuda", "cpu", "meta")

# ---- where a model comes from ----
# file: a model file; shipped: a reference model file in profiles/models/; the others build a library's model
# by name or from its configuration (hf:ID or hf:PATH/config.json, timm:NAME, torchvision:NAME).
MODEL_SOURCES: tuple[str, ...] = ("file", "shipped", "hf", "timm", "torchvision")
ModelSourceKind = Literal[MODEL_SOURCES]
# The Hugging Face tasks `advisor profile hf:...` builds a model for (a head and a loss each).
HF_TASKS: tuple[str, ...] = ("causal-lm", "masked-lm", "seq-cls", "image-cls")


def check_choice(value: str | None, choices: tuple[str, ...], option: str) -> None:
    """A value typed for `option` must be one of `choices`: else a UserError with the closest spelling."""
    if value is not None and value not in choices:
        raise UserError(
            f"unknown {option} {value!r}",
            f"use one of {', '.join(choices)}",
            difflib.get_close_matches(value, choices, n=2),
        )


# How the blocks' elementwise ops run: as eager PyTorch, as a large-scale framework's fused kernels, or whichever
# the model implies (estimator/setup.py: uses_framework).
KERNELS = ("auto", "eager", "fused")
