"""Pydantic models of the catalog: devices, efficiency profiles, instances.

Files hold quantities with units ('80 GB', '3.35 TB/s', '989 TFLOPS'); the models hold floats in SI base
units. Unknown fields are errors everywhere, so a typo never passes silently.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from advisor import units
from advisor.errors import UserError
from advisor.vocab import DTYPES, PHASES, ConvReorder, DeviceKind, DrawOp, GemmLayout, SoftwareStack, WorkloadKind


def _quantity(kind: str, low: float, high: float):
    """A float parsed from a number or a string with a unit, checked to lie in [low, high]."""

    def parse(value: object) -> float:
        try:
            return units.parse(value, kind, kind)
        except UserError as exc:  # pydantic adds the field's location to a ValueError
            raise ValueError(exc.line()) from None

    def check(value: float) -> float:
        if not (low <= value <= high):
            raise ValueError(f"{value:g} is outside the plausible range {low:g}..{high:g} (SI base units) for a {kind}")
        return value

    return Annotated[float, BeforeValidator(parse), AfterValidator(check)]


Bytes = _quantity("size", 1e6, 1e15)  # 1 MB .. 1 PB
Bandwidth = _quantity("bandwidth", 1e6, 1e15)  # 1 MB/s .. 1 PB/s
FlopRate = _quantity("flops", 1e6, 1e18)  # 1 MFLOP/s .. 1 EFLOP/s per device
Frequency = _quantity("frequency", 1e8, 1e10)  # 100 MHz .. 10 GHz
Duration = _quantity("duration", 1e-9, 3.2e7)  # 1 ns .. a year
Seconds = _quantity("duration", 0.0, 3.2e7)  # 0 .. a year: a fixed cost that may be nothing
ReserveBytes = _quantity("size", 0.0, 1e13)  # 0 .. 10 TB: memory a framework holds besides tensors
Id = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._+-]*$", max_length=80)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Link(Strict):
    """A link and its bandwidth in one direction (datasheets often quote both directions summed)."""

    type: str = Field(description="nvlink4, infinity-fabric, ici, pcie5-x16, ...")
    bandwidth_per_direction: Bandwidth


class PeakFlops(Strict):
    """Dense peak FLOP/s (never 'with sparsity') of one kind of unit, per dtype."""

    fp64: FlopRate | None = None
    fp32: FlopRate | None = None
    tf32: FlopRate | None = None
    fp16: FlopRate | None = None
    bf16: FlopRate | None = None
    fp8: FlopRate | None = None
    fp4: FlopRate | None = None
    int8: FlopRate | None = None

    def get(self, dtype: str) -> float | None:
        """The peak for `dtype`; None for a dtype the unit has no figure for (or no catalog dtype at all)."""
        return getattr(self, dtype) if dtype in DTYPES else None

    def dtypes(self) -> list[str]:
        return [d for d in DTYPES if getattr(self, d) is not None]


class Device(Strict):
    id: Id
    name: str
    aliases: list[str] = Field(default_factory=list)  # a factory: no copy of a default per entry
    vendor: str
    kind: DeviceKind
    efficiency: Id = Field(description="id of the efficiency profile the estimator uses for this device")
    memory_bytes: Bytes | None = Field(None, description="on-device memory; None for a CPU (host memory)")
    memory_bandwidth: Bandwidth
    matrix_flops: PeakFlops = Field(PeakFlops(), description="matrix/tensor unit (tensor cores, MXU, AMX)")
    vector_flops: PeakFlops = Field(description="vector/SIMD units (CUDA cores, VPU, AVX)")
    device_link: Link | None = Field(None, description="device-to-device link (NVLink, ICI...)")
    host_link: Link | None = None
    cores: int | None = Field(None, gt=0, le=4096, description="CPU cores per socket (CPUs only)")
    threads_per_core: int | None = Field(None, ge=1, le=8, description="CPUs only")
    sm_count: int | None = Field(None, gt=0, le=1024, description="GPU streaming multiprocessors")
    boost_clock: Frequency | None = Field(
        None, description="GPUs: the datasheet's boost clock, for kernels limited per multiprocessor and clock"
    )
    gemm_share: float | None = Field(
        None,
        gt=0,
        le=1.5,
        description="GPUs: the best 16-bit GEMM rate measured on this device (square torch.matmul, the best of "
        "several sizes) over its dense fp16 matrix peak; against its efficiency family's `gemm_share` it scales "
        "the tensor-core rate the family's matrix curves assume (a card that runs at its datasheet rate, or a "
        "power-limited one below it)",
    )
    fp32_gemm_share: float | None = Field(
        None,
        gt=0,
        le=1.5,
        description="GPUs: the best fp32 GEMM rate measured on this device without TF32 (square torch.matmul on "
        "the CUDA cores, the best of several sizes) over its datasheet fp32 vector peak, measured beside "
        "`gemm_share`; fp32 GEMMs run at this share over the family's `gemm_share` times the rate its matrix "
        "curves give",
    )
    tensorcores_per_chip: int | None = Field(
        None, ge=1, le=16, description="TPUs: TensorCores per chip (slice names count cores for v2-v4 and v5p)"
    )
    workers_per_device: int | None = Field(
        None,
        ge=1,
        le=64,
        description="training processes a launcher starts per device (torchrun --nproc_per_node counts logical "
        "NeuronCores on Trainium); default 1",
    )
    software_stack: SoftwareStack | None = Field(
        None, description="what PyTorch runs on: cuda, rocm, xla, neuron, habana, cann or cpu (default: cpu for a CPU)"
    )
    skypilot_accelerator: str | None = Field(
        None, description="SkyPilot's accelerator name for it (`sky show-gpus`); None where SkyPilot has none"
    )
    training: bool = Field(True, description="false for inference-only chips: never a training candidate")
    tdp_watts: float = Field(gt=0, le=5000)
    launch_year: int = Field(ge=1990, le=2035)
    source: str = Field(min_length=5)
    extra_sources: list[str] = Field(default_factory=list)
    as_of: dt.date
    notes: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Device:
        if self.kind != "cpu" and self.memory_bytes is None:
            raise ValueError("memory_bytes is required for a non-CPU device")
        if self.kind == "cpu" and (self.cores is None or self.threads_per_core is None):
            raise ValueError("a CPU needs cores and threads_per_core (per socket)")
        if not self.vector_flops.dtypes():
            raise ValueError("vector_flops needs at least one dtype (fp32)")
        if self.kind != "cpu" and self.software_stack is None:
            raise ValueError("software_stack is required for a non-CPU device (cuda, rocm, xla, neuron, ...)")
        return self

    @property
    def stack(self) -> str:
        """The software stack, `cpu` for a CPU that does not name one."""
        return self.software_stack or "cpu"

    def peak(self, dtype: str, unit: Literal["matrix", "vector"]) -> float | None:
        return (self.matrix_flops if unit == "matrix" else self.vector_flops).get(dtype)

    def dtypes(self) -> list[str]:
        """Every dtype the device can compute in, on either unit."""
        have = set(self.matrix_flops.dtypes()) | set(self.vector_flops.dtypes())
        return [d for d in DTYPES if d in have]


class Step(Strict):
    """One point of an efficiency curve: an op of `min_size` (FLOPs or bytes) reaches `efficiency`; between points
    the curve runs as a power law (Efficiency.at)."""

    min_size: float = Field(ge=0)
    efficiency: float = Field(gt=0, le=1)


def _ascending(steps: list[Step]) -> list[Step]:
    sizes = [s.min_size for s in steps]
    if sizes != sorted(sizes) or len(set(sizes)) != len(sizes):
        raise ValueError("steps must be listed by strictly increasing min_size")
    if not steps or steps[0].min_size != 0:
        raise ValueError("the first step must have min_size 0 so that every op size is covered")
    return steps


Curve = Annotated[list[Step], AfterValidator(_ascending)]

CONV_EFFICIENCY_MAX = 2.0


class ConvStep(Step):
    """A step of a dense convolution's curve. Its efficiency may pass 1: the matrix peak it is a fraction of is the
    best rate of a square GEMM (a calibrated device's torch.mm), and a library's direct convolution kernels can beat
    it (oneDNN's 3x3 and 3x3x3 layers on the project's Zen 4 VM: 1.1-1.4x its best 512-1024 GEMM, one thread). Up to
    2: beyond, a measurement is wrong, not fast. Depthwise and transposed curves stay under 1 (their small layers'
    rates, left after the call's fixed cost, can come out absurd)."""

    efficiency: float = Field(gt=0, le=CONV_EFFICIENCY_MAX)


ConvCurve = Annotated[list[ConvStep], AfterValidator(_ascending)]


# Properties of a vendor's kernel libraries (cuBLAS, cuDNN), not of one machine: what `kernel_rules` takes over.
KERNEL_RULES = (
    "tensor_core_channels",
    "tensor_core_padding",
    "nchw_transpose",
    "gemm_tile",
    "tiles_per_sm",
    "unaligned_gemm_flops_per_clock",
    "batch_norm_nchw",
    "index_sort",
    "row_gather",
)


class ChannelBlocks(Strict):
    """A normalization kernel that gives each channel one thread block (cuDNN's batch norm on NCHW tensors whose
    channels hold more than fits on one multiprocessor): its time per call is the channel's elements over one
    block's rate, times the waves of blocks when the channels outnumber the slots, whatever the bandwidth."""

    forward_per_clock: float = Field(gt=0, le=1e3, description="elements one block normalizes per clock, forward")
    backward_per_clock: float = Field(gt=0, le=1e3, description="elements one block handles per clock, backward")
    blocks_per_sm: int = Field(ge=1, le=64, description="channel blocks one multiprocessor runs at once")
    channel_bytes_max: float = Field(
        ge=1024,
        le=1e8,
        description="bytes of one channel's tensors (forward: the input; backward: the input and its gradient) "
        "up to which the library keeps a channel on one multiprocessor and runs at the memory rate instead",
    )


class IndexSort(Strict):
    """The gradient of an embedding lookup as the library computes it on the device: the lookup's indices are
    radix-sorted with their positions and cut into segments of equal rows before the gradient rows are summed
    into the table (PyTorch's CUDA embedding backward). That traffic and those kernels come on top of the
    gradient rows and the table the profile records."""

    bytes_per_index: float = Field(gt=0, le=1e4, description="bytes the sort and the segmenting move per index")
    kernels: int = Field(ge=0, le=1000, description="kernels one call launches besides its own")
    direct_max_indices: int = Field(
        0,
        ge=0,
        le=10**9,
        description="indices per call up to which aten.embedding_dense_backward sums straight into the table in "
        "one kernel, with no sort (0: it always sorts); embedding bags always sort",
    )


class RowGather(Strict):
    """A lookup of table rows (aten.embedding's forward) as PyTorch's CUDA gather runs it: one thread block per
    looked-up row and per `bytes_per_block` of it (vectorized_gather_kernel, ATen's IndexKernelUtils.cu: up to 256
    threads, each moving one 16-byte vector). Short rows make a call as long as the multiprocessors take to start
    and retire that many blocks, however few bytes they move."""

    bytes_per_block: int = Field(4096, ge=16, le=1 << 20, description="bytes of a row one thread block moves")
    sm_clocks_per_block: float = Field(
        gt=0, le=1e5, description="clock cycles a multiprocessor takes per such block, start to retirement"
    )


class WindowCost(Strict):
    """A pooling op's cost per window element beyond what its op curve carries: the curve is measured on 2 x 2
    (x 2) windows at stride 2, and a wider or denser window reads each input element more often than its bytes
    say (a 3 x 3 stride-1 max pool reads every element nine times for about twice the bytes of a 2 x 2 stride-2
    one). A call of F FLOPs (one per window element per output) and B bytes adds `seconds_per_flop` x
    max(0, F - `flops_per_byte` x B) to the time its curve gives."""

    flops_per_byte: float = Field(ge=0, le=1e3, description="FLOPs per byte of the calls the op curve measured")
    seconds_per_flop: float = Field(ge=0, le=1e-6, description="time of each FLOP beyond that ratio")


class ColdPoint(Strict):
    """One point of `Efficiency.optimizer_step`: at a training step that moves `step_bytes`, the optimizer phase
    costs `seconds` once, beyond its ops, and `seconds_per_byte` for each byte of its data (parameters, gradients
    and state) that the step before it has pushed out of the caches."""

    step_bytes: float = Field(ge=0)
    seconds: Seconds
    seconds_per_byte: float = Field(0.0, ge=0, le=1e-8, description="per byte of the optimizer's data; 0: not measured")


def _by_bytes(points: list[ColdPoint]) -> list[ColdPoint]:
    sizes = [p.step_bytes for p in points]
    if sizes != sorted(sizes) or len(set(sizes)) != len(sizes):
        raise ValueError("points must be listed by strictly increasing step_bytes")
    return points


class CopyPoint(Strict):
    """One point of `Efficiency.permuted_copy`: a copy between two layouts that moves `run` elements in each run
    contiguous on both sides takes `ratio` times a plain copy of its bytes."""

    run: int = Field(ge=1, le=10**9)
    ratio: float = Field(ge=1.0, le=1e3)


def _by_run(points: list[CopyPoint]) -> list[CopyPoint]:
    runs = [p.run for p in points]
    if runs != sorted(runs) or len(set(runs)) != len(runs):
        raise ValueError("points must be listed by strictly increasing run")
    return points


class Efficiency(Strict):
    """Achievable fractions of datasheet peaks for a device family, and the fixed cost of an op."""

    id: Id
    note: str = Field(min_length=10, description="where these figures come from")
    matrix: Curve = Field(description="matmul/conv efficiency by FLOPs per op")
    vector: float = Field(gt=0, le=1, description="elementwise/reduction efficiency vs vector peak")
    memory: Curve = Field(description="bandwidth efficiency by bytes per op")
    op_overhead_s: Duration = Field(description="fixed cost per op (launch, dispatch)")
    device_link: float = Field(gt=0, le=1, description="achievable fraction of link bandwidth")
    network: float = Field(gt=0, le=1, description="achievable fraction of inter-node bandwidth")
    collective_latency_s: Duration = Field(description="fixed latency of one collective")
    memory_reserve_bytes: ReserveBytes = Field(
        0.0, description="memory the framework holds besides tensors (CUDA context, workspaces), e.g. '1 GB'"
    )
    memory_reserve_fraction: float = Field(0.0, ge=0, lt=1, description="share of capacity lost to fragmentation")
    # Calibrated fields (written by `advisor calibrate`; optional, so datasheet profiles need none of them).
    matrix_by_dtype: dict[str, Curve] = Field(
        {}, description="matmul/conv efficiency curve per dtype (fp32, bf16...); overrides `matrix` for that dtype"
    )
    gemm_share: float | None = Field(
        None,
        gt=0,
        le=1.5,
        description="the measured best-shape GEMM share (devices' `gemm_share`) the matrix curves assume: the "
        "median of the family's measured devices; a device with its own figure runs its tensor cores at "
        "device / family times the curves' rate",
    )
    fp32_gemm_share: float | None = Field(
        None,
        gt=0,
        le=1.5,
        description="the fp32 GEMM share (devices' `fp32_gemm_share`) of a device of this family without a figure "
        "of its own: the median of the family's measured devices",
    )
    matrix_reference: str | None = Field(
        None,
        description="dtype whose matrix peak the `matrix` curve is a fraction of (a GPU's 16-bit tensor cores): a "
        "GEMM at a slower dtype (fp32 on CUDA cores, tf32) looks the curve up at the FLOPs the reference dtype does "
        "in the same time, since what the curve describes (a kernel's ramp, its tail wave) is paid in time",
    )
    phase_overhead_s: dict[Literal[PHASES], Duration] = Field(
        {},
        description="fixed cost per op in each phase of eager training (module calls, autograd); "
        "overrides op_overhead_s for that phase",
    )
    conv_by_intensity: ConvCurve | None = Field(
        None,
        description="convolution (forward and backward) efficiency by FLOPs per byte of the call; "
        "depthwise and 1x1 convolutions reach far less than GEMMs of the same size",
    )
    op_efficiency: dict[str, Annotated[float, Field(gt=0, le=1)]] = Field(
        {},
        description="compute efficiency of named aten ops (fused attention, softmax, transcendentals) whose "
        "cost the FLOP count misjudges; overrides the curves for that op",
    )
    fused_elementwise: float = Field(
        1.0,
        gt=0,
        le=1,
        description="share of the time of the repeated blocks' elementwise and memory-bound ops (norms, "
        "activations, casts, residual adds) left after the kernel fusion large-scale training frameworks do "
        "(Megatron-LM and Transformer Engine, XLA); 1 = every op runs as its own eager kernel",
    )
    tp_overlap: float = Field(
        0.0,
        ge=0,
        lt=1,
        description="share of tensor-parallel collective time hidden behind the matmuls (Transformer Engine's "
        "communication overlap, XLA's collective matmuls); 0 = on the critical path",
    )
    calibration_threads: int | None = Field(
        None, ge=1, le=4096, description="torch CPU threads the calibration ran with (validate uses the same)"
    )
    matmul_by_intensity: Curve | None = Field(
        None,
        description="cap on matmul efficiency by FLOPs per byte of the call: a GEMM with a small dimension "
        "(a small batch, one recurrent step) streams its weights for few FLOPs and reaches far less than a "
        "square GEMM of the same FLOPs",
    )
    matmul_by_layout: dict[GemmLayout, Curve] = Field(
        {},
        description="matmul_by_intensity for each of a linear layer's three GEMMs (forward x·Wᵀ, input gradient "
        "g·W, weight gradient gᵀ·x), measured apart: at a small batch the same FLOPs and bytes take twice as long "
        "in one layout as in another; a matmul whose layout the profile does not tell reads matmul_by_intensity",
    )
    conv_backward_by_intensity: ConvCurve | None = Field(
        None, description="as conv_by_intensity, for convolution_backward (input and weight gradients)"
    )
    depthwise_by_intensity: Curve | None = Field(
        None,
        description="conv_by_intensity for depthwise convolutions (one input channel a group), measured apart: "
        "their efficiency need not rise with FLOPs per byte (on a CPU the weight gradient of a 7x7 depthwise layer "
        "can run at a third of a 3x3's rate); other convolutions, and depthwise ones without it, read the conv curves",
    )
    depthwise_backward_by_intensity: Curve | None = Field(
        None, description="as depthwise_by_intensity, for a depthwise convolution's backward call"
    )
    transposed_by_intensity: Curve | None = Field(
        None,
        description="conv_by_intensity for transposed convolutions (ConvTranspose upsampling), measured apart: a "
        "library may run them on other kernels than a plain convolution of the same FLOPs per byte (oneDNN as the "
        "backward-data pass of a strided convolution); transposed convolutions without it read the conv curves",
    )
    transposed_backward_by_intensity: Curve | None = Field(
        None, description="as transposed_by_intensity, for a transposed convolution's backward call"
    )
    op_curves: dict[str, Curve] = Field(
        {},
        description="efficiency of named aten ops by bytes per call, against the op's own roofline at the "
        "device's peaks (max(FLOPs / vector peak, bytes / bandwidth)): normalisations, pooling, embedding "
        "gathers and scatters, dropout, optimizer updates; overrides the generic curves for that op",
    )
    op_window: dict[str, WindowCost] = Field(
        {},
        description="pooling ops with an op curve: the time of window elements beyond the curve's (measured by "
        "advisor calibrate on 3 x 3 stride-1 windows)",
    )
    min_op_s: dict[str, Duration] = Field(
        {},
        description="least time of one call of these aten ops beyond the per-op overhead: a library call "
        "(a GEMM, a convolution) has a setup cost that no efficiency at its size describes",
    )
    draw_half_ratio: dict[DrawOp, Annotated[float, Field(gt=0.0, le=100.0)]] = Field(
        {},
        description="random draws (aten.bernoulli_, aten.native_dropout): the time of one call drawing with "
        "probability 0.5 over the time at the probability its op curve was measured at (a 1 with probability 0.9, "
        "kernels.DRAW_CURVE_Q); a CPU kernel that branches on each draw mispredicts in proportion to min(p, 1 - p), "
        "so the estimate scales the op's curve linearly in it (kernels.draw_factor). Measured by calibrate; "
        "missing: taken as 1",
    )
    op_setup_s: dict[str, Duration] = Field(
        {},
        description="time every call of these aten ops adds to the time its efficiency gives, whatever its size: "
        "oneDNN's convolutions on a CPU cost some 50-190 µs a call from two samples on, which a curve by FLOPs per "
        "byte cannot carry (fitted by calibrate from the same layers at two batch sizes)",
    )
    conv_scale: float | None = Field(
        None,
        gt=0,
        le=2,
        description="convolutions without an intensity curve reach this share of the "
        "efficiency of a GEMM of the same FLOPs (cuDNN's implicit-GEMM kernels on real layer shapes)",
    )
    tensor_core_padding: bool = Field(
        False,
        description="the library pads channels that are not a multiple of tensor_core_channels up to it and runs "
        "the convolution on tensor cores (cuDNN 7.6.3 and later) instead of on the vector units: the padded lanes "
        "compute nothing, and the padded copy of the input (or output) crosses memory",
    )
    tensor_core_channels: int | None = Field(
        None,
        ge=1,
        le=256,
        description="16-bit convolutions run on tensor cores only with channels per group a "
        "multiple of this (cuDNN: 8); others on the vector units",
    )
    nchw_transpose: list[str] = Field(
        [], description="dtypes whose tensor-core convolutions on NCHW input are bracketed by NHWC transposes"
    )
    gemm_tile: list[int] | None = Field(
        None,
        min_length=2,
        max_length=2,
        description="output tile (rows, columns) of the family's GEMM and "
        "convolution kernels, for wave quantization over the device's sm_count",
    )
    tiles_per_sm: int | None = Field(None, ge=1, le=64, description="tiles one multiprocessor runs at once")
    unaligned_gemm_flops_per_clock: float | None = Field(
        None,
        gt=0,
        le=1e5,
        description="FLOPs per multiprocessor and clock of a 16-bit GEMM with a dimension that is not a multiple "
        "of tensor_core_channels (16 bytes): the library falls back to tensor-core kernels that load element by "
        "element (CUTLASS align1/align2), so the GEMM runs at most this x sm_count x boost_clock",
    )
    batch_norm_nchw: ChannelBlocks | None = Field(
        None, description="batch norm on NCHW tensors with large channels, one thread block per channel"
    )
    index_sort: IndexSort | None = Field(
        None, description="an embedding gradient sorts its indices first (None: priced as its recorded traffic)"
    )
    row_gather: RowGather | None = Field(
        None, description="an embedding lookup runs one thread block per row (None: priced as its recorded traffic)"
    )
    kernel_rules: str | None = Field(
        None,
        description="id of a catalog efficiency profile whose kernel rules (KERNEL_RULES: tensor-core channel "
        "alignment and padding, NCHW transposes, GEMM tiles and waves, unaligned GEMMs, NCHW batch norm, index sorts, "
        "row gathers) this one "
        "follows where it sets none itself: a calibration measures rates on aligned, square work and takes the "
        "library's rules from the GPU's family",
    )
    fused_rnn: list[str] = Field(
        [],
        description="recurrent modes (LSTM, GRU, RNN_TANH, RNN_RELU) the family's library runs as fused "
        "kernels (cuDNN, oneDNN): the profile's per-step decomposition is replaced by their cost",
    )
    launch_s: Duration | None = Field(
        None, description="device time between kernels a library launches back to back (default op_overhead_s)"
    )
    host_op_s: Duration | None = Field(
        None,
        description="host (CPU) time to issue one eager op on an asynchronous device: a phase takes "
        "the longer of the device's work and the host's issuing; without it op_overhead_s adds per op",
    )
    host_phase_s: dict[str, Duration] = Field(
        {},
        description="host time per eager op by training phase (forward, backward, optimizer) on an asynchronous "
        "device, where it was measured (advisor calibrate --device cuda); host_op_s for a phase without one",
    )
    module_overhead_s: Duration | None = Field(
        None, description="fixed cost of one nn.Module call in the forward pass (Python), besides its ops"
    )
    loop_op_s: Duration | None = Field(
        None,
        description="CPUs: fixed cost of one forward op that a recurrent layer run step by step issues from its "
        "C++ loop (no Python between them), measured by advisor calibrate on a tiny GRU; replaces the forward "
        "phase's cost per op for those ops. None: the phase's cost per op",
    )
    loop_call_s: Duration | None = Field(
        None,
        description="CPUs: fixed cost of one call of such a recurrent layer in the forward pass, beyond its ops "
        "and the module call (its Python: checks, the weights gathered, the initial state)",
    )
    optimizer_step: Annotated[list[ColdPoint], AfterValidator(_by_bytes)] = Field(
        [],
        description="CPUs: the optimizer phase's fixed cost per step, beyond its ops (`phase_overhead_s`), by the "
        "bytes the step moves: the optimizer's own cost per step, measured by advisor calibrate on AdamW's warm "
        "step, plus its cold start, as the backward pass before it has streamed the step's data through the caches "
        "and evicted the optimizer's code, objects and data (AdamW's step over 16 small tensors right after an add "
        "of that many bytes, less the same step straight after; per byte of optimizer data, the same over 16 large "
        "tensors against the small ones). Log-linear between points, the end points beyond. Empty: not priced",
    )
    permuted_copy: Annotated[list[CopyPoint], AfterValidator(_by_run)] = Field(
        [],
        description="how much longer a copy between two layouts (a transposed or permuted tensor made contiguous) "
        "takes than a plain copy of its bytes, by the elements it moves in each run contiguous on both sides "
        "(OpRecord.copy_run), measured by advisor calibrate on 1 MB tensors; straight on a log scale of runs "
        "between points, the end points beyond. Empty: priced as a plain copy",
    )
    first_touch_bandwidth: Bandwidth | None = Field(
        None,
        description="CPUs: the rate at which the OS hands out fresh pages (filling a new 64 MiB tensor, less "
        "filling one already mapped), measured by advisor calibrate at its thread count; prices the memory a "
        "step faults in (a profile's step_fault_bytes). None: not priced",
    )
    conv_channel_block: int | None = Field(
        None,
        ge=1,
        le=256,
        description="CPUs: the channel block of the convolution library's layouts (oneDNN keeps activations in "
        "blocks of 16 channels on AVX-512, 8 on AVX2), measured by advisor calibrate from dense layers at "
        "channel counts on and off it: a dense convolution runs its output channels, and its input channels "
        "beyond one block, rounded up to a whole block (24 channels cost what 32 do). None: not measured",
    )
    conv_reorder: dict[ConvReorder, Curve] = Field(
        {},
        description="CPUs: oneDNN's reorders of a plain (NCHW) convolution's activations into its channel-blocked "
        "layout and back, as efficiency against memory_bandwidth by the bytes one pass moves (the plain tensor read "
        "and the blocked one written, or the reverse): 'aligned' for channel counts on conv_channel_block, 'padded' "
        "for others (rounded up, on slower kernels). Measured by advisor calibrate as 1x1 layers on NCHW input less "
        "the same layers on channels-last input; the conv and depthwise curves are then fitted on the layers' times "
        "less these passes, and an estimate adds them per layer at its own size. Empty: the passes are part of the "
        "conv curves, at the calibration layers' sizes",
    )
    handoff: Curve | None = Field(
        None,
        description="CPUs at more than one thread: by bytes per call, the rate of an out-of-place add whose input "
        "was just written at its own thread count (each thread reads the share it wrote, from its own core's cache, "
        "as the memory curve and the op curves were measured) over its rate when one thread wrote it all (the other "
        "threads' shares come modified from another core's cache), measured by advisor calibrate. In a training "
        "step an op reads what another op wrote, split between the threads otherwise (a convolution's or GEMM's "
        "output tiles against an elementwise op's halves), so memory-bound ops are priced at this fraction of "
        "their measured rate, and an op with its own measured curve pays what the fraction costs its bytes at the "
        "memory curve's streaming rate on top of its own time (a cost of where the data is: a max pool's windows or a "
        "random draw do not slow in proportion). None: not measured (one thread, GPUs, datasheet entries)",
    )
    gemm_bias_passes: float | None = Field(
        None,
        ge=0,
        description="CPUs: the passes over its output, at the memory curve, that a GEMM with a bias (aten.addmm: a "
        "linear layer) makes beyond the GEMM itself: the library writes the bias, broadcast, into the output and the "
        "GEMM reads it back to add its product. Measured by advisor calibrate as linear layers' addmm less the same "
        "mm; an estimate adds this many passes of each addmm's output as memory traffic of their own. None: not "
        "measured (GPUs, whose libraries add the bias in the GEMM's epilogue, datasheet entries)",
    )
    gemm_output_passes: float | None = Field(
        None,
        ge=0,
        description="CPUs: the passes over its output, at the memory curve, that a GEMM (aten.mm, bmm, addmm, baddbmm) "
        "makes writing a fresh output in a training step beyond writing where the previous call's output was (what "
        "the matmul curves time): a step's activations and gradients land in memory no recent op touched. Measured by "
        "advisor calibrate as linear layers' GEMMs into outputs rotating through more memory than the caches hold, "
        "less the same into one output; an estimate adds this many passes of each GEMM's per-sample output as memory "
        "traffic of their own. None: not measured (GPUs, datasheet entries)",
    )
    vector_in_turn: Curve | None = Field(
        None,
        description="CPUs: by bytes per call, what running in turn costs memory-bound ops (multiply, add, GELU, "
        "softmax) that a model runs one after another, each reading what the last wrote and keeping its own output "
        "as a forward pass keeps its activations, against each called alone on the same inputs (as the memory curve "
        "and the op curves were measured, with every output written where the last call's freed one was, in the "
        "cache); measured by advisor calibrate and stored as a share of the memory curve's streaming rate: streaming "
        "time / (streaming time + the time added in turn). Every op that writes a fresh output is priced its bytes at "
        "the streaming rate over this share, less the streaming time, on top of its own time (a cost of the memory "
        "its output lands in, whatever the op's own rate): not matrix ops (a CPU's convolution curves are timed in "
        "turn already), not ops in place (their output is their input, in the cache), not the optimizer's updates "
        "(looked up by the whole step's traffic). None: not measured (GPUs, datasheet entries, calibrations before "
        "it). Calibrations before 2026-12-07 stored the ops' rate in turn over their rate alone, which prices less: "
        "calibrate again",
    )
    fresh_output: Curve | None = Field(
        None,
        description="CPUs: by the bytes a training step touches (its ops' reads and writes), the rate at which its ops "
        "write fresh outputs, as a share of memory_bandwidth: each output lands in memory last written about a step "
        "ago, in the cache for a small step and beyond it for a large one. Measured by advisor calibrate as a chain of "
        "the fastest ops (a multiply, an add) writing 1 MiB each into buffers that fill the footprint, allocated "
        "before the timing. No call of the ops vector_in_turn applies to takes less than its bytes written at this "
        "rate, its separate passes (a zeroed gradient table) included: a floor, not a cost added, since an op slow "
        "for its bytes writes while it computes. None: not measured (GPUs, datasheet entries, calibrations before "
        "2026-12-07)",
    )
    parallel_op_s: list[Seconds] | None = Field(
        None,
        description="CPUs at more than one thread: an add on 40,000 floats (the threads' fork and join, little "
        "work) timed by advisor calibrate before, between and after its sweeps; validate times it again around "
        "its steps and says when the threads are in a slower state than when calibrated (shared VMs)",
    )
    calibration_warnings: list[str] = Field(
        [], description="what `advisor calibrate` found suspicious (a busy machine): empty for a clean run"
    )

    @staticmethod
    def at(curve: list[Step], size: float) -> float:
        """The efficiency at `size`: each step's figure holds at its min_size and the curve runs as a power law
        between consecutive steps (straight on log-log axes), flat beyond the last; the first step (min_size 0,
        "anything smaller") stands one decade below the second. A step function instead would price an op just
        below a step several times slower than one just above it (more work in less time)."""
        sizes, values = curve_points(curve)
        if size <= sizes[0]:
            return values[0]
        for i in range(1, len(sizes)):
            if size < sizes[i]:
                s0, s1, e0, e1 = sizes[i - 1], sizes[i], values[i - 1], values[i]
                return e0 * math.exp(math.log(e1 / e0) * math.log(size / s0) / math.log(s1 / s0))
        return values[-1]


def curve_points(curve: list[Step]) -> tuple[list[float], list[float]]:
    """(sizes, efficiencies) of a curve's points for interpolation (Efficiency.at): a first step at min_size 0
    is placed one decade below the second."""
    sizes = [s.min_size for s in curve]
    if len(sizes) > 1 and sizes[0] <= 0:
        sizes[0] = sizes[1] / 10
    elif sizes[0] <= 0:
        sizes[0] = 1.0
    return sizes, [s.efficiency for s in curve]


class Pricing(Strict):
    on_demand_usd_per_hour: float = Field(ge=0, le=10000)
    spot_usd_per_hour: float | None = Field(None, ge=0, le=10000)
    per: Literal["instance", "device"] = Field(
        "instance", description="'device': prices are per device-hour (TPU chip-hour)"
    )
    regions: list[str] = Field(min_length=1)
    billing_granularity_s: Duration = 1.0
    minimum_billed_s: Duration = 60.0


class Instance(Strict):
    id: Id
    provider: Id
    name: str = Field(description="the provider's own name, e.g. p5.48xlarge")
    aliases: list[str] = Field(default_factory=list)  # a factory: no copy of a default per entry
    device: Id
    device_count: float = Field(gt=0, le=100000)
    vcpus: int | None = Field(None, gt=0, le=4096, description="None where unknown (SkyPilot TPU rows)")
    host_memory_bytes: Bytes | None = None
    fabric: Link | None = Field(None, description="intra-node device fabric: nvswitch, nvlink-pairs, pcie, ici")
    network: Link | None = Field(None, description="inter-node network per node (EFA, InfiniBand, DCN)")
    max_nodes: int = Field(1, ge=1, le=100000, description="how many of these can be joined for one job")
    fabric_domain_devices: int | None = Field(
        None,
        ge=1,
        le=100000,
        description="devices joined by the intra-node fabric when that domain spans several nodes (72 for a "
        "GB200 NVL72 rack, the slice for TPU); default: one node's devices",
    )
    pricing: Pricing
    amortized: bool = Field(False, description="on-prem: the price is an amortized estimate to override")
    source: str = Field(min_length=5)
    extra_sources: list[str] = Field(default_factory=list)
    as_of: dt.date
    notes: str | None = None

    @model_validator(mode="after")
    def _domain(self) -> Instance:
        if self.fabric_domain_devices is not None and self.fabric_domain_devices < self.device_count:
            raise ValueError(
                f"fabric_domain_devices {self.fabric_domain_devices} is fewer than the node's {self.device_count:g} "
                "devices (it counts every device the fabric joins, one node's included)"
            )
        return self

    @property
    def domain_devices(self) -> float:
        """Devices one fast-fabric domain joins: the node's, unless the catalog says the domain spans nodes."""
        return self.fabric_domain_devices or self.device_count

    def hourly_usd(self, spot: bool = False) -> float | None:
        """USD per hour for one whole instance (node), or None when there is no such offer."""
        price = self.pricing.spot_usd_per_hour if spot else self.pricing.on_demand_usd_per_hour
        if price is None:
            return None
        return price * self.device_count if self.pricing.per == "device" else price


class AccuracyBand(Strict):
    """How far estimates were off on validation runs for one device family and kind of workload: written by
    the benchmarks (benchmarks/accuracy.py, benchmarks/published.py), read by the estimator to attach an
    expected error band to every estimate."""

    id: Id
    applies_to: Id = Field(
        description="an efficiency profile id (a device family, e.g. nvidia-ampere), calibrated-cpu / "
        "calibrated-gpu for any device measured by `advisor calibrate`, or a device id (that device's own runs: "
        "its estimates take the wider of its family's band and this one)"
    )
    workload: WorkloadKind = Field(description="kind of model: cnn, transformer, rnn, recommender, mlp, or any")
    threads: int | None = Field(None, ge=1, le=4096, description="CPU: torch threads of the validation runs")
    error_band: float = Field(ge=0, le=100, description="median |estimated - measured| / measured")
    max_error: float = Field(ge=0, le=100)
    bias: float = Field(
        ge=-100, le=100, description="mean signed error, positive when estimates were faster than measured"
    )
    rows: int = Field(ge=1, description="validation runs behind the figures")
    basis: str = Field(min_length=10, description="what the figures were measured on, in words")
    source: str = Field(min_length=5)
    as_of: dt.date


class Provider(Strict):
    """A cloud (or the owner of on-prem machines): what starting a run there costs before the first step."""

    id: Id
    name: str
    owned: bool = Field(
        False,
        description="owned machines (on-prem): prices are amortized estimates; they take part in recommendations "
        "only when --providers names them, and are labelled 'owned, amortized'",
    )
    provisioning_s: Seconds = Field(description="from the launch request to nodes that run the setup")
    provisioning_by_kind: dict[DeviceKind, Seconds] = Field({}, description="overrides by device kind (TPU slices)")
    setup_s: Seconds = Field(description="installing the software stack on the nodes (in parallel)")
    source: str = Field(min_length=5)
    extra_sources: list[str] = []
    as_of: dt.date
    notes: str | None = None

    def provisioning_for(self, kind: str) -> float:
        return self.provisioning_by_kind.get(kind, self.provisioning_s)


class Runtime(Strict):
    """The costs of a run besides its steps that do not depend on the provider: documented defaults, each
    overridable by an overlay (and the checkpoint interval and evaluation share by command-line options)."""

    id: Id
    provisioning_s: Seconds = Field(description="for a provider with no `providers` entry")
    setup_s: Seconds = Field(description="for a provider with no `providers` entry")
    framework_init_s: Seconds = Field(description="import, device and process-group start, model build: per run")
    collective_init_s_per_node: Seconds = Field(description="communicator set-up, growing with the node count")
    checkpoint_every_s: Seconds = Field(description="interval between checkpoint writes (0: only the final one)")
    checkpoint_bandwidth: Bandwidth = Field(description="write bandwidth of one node to persistent storage")
    eval_share: float = Field(ge=0, lt=1, description="evaluation time as a share of the training time")
    image_samples_per_s_per_vcpu: float = Field(
        gt=0, le=1e6, description="JPEG decode and augmentation per vCPU at image_reference_pixels"
    )
    image_reference_pixels: float = Field(gt=0, le=1e9, description="the image size that rate is quoted at")
    source: str = Field(min_length=5)
    extra_sources: list[str] = []
    as_of: dt.date
    notes: str | None = None


class Catalog(Strict):
    """Everything loaded, by id. References are checked by the loader, which knows the files."""

    devices: dict[str, Device]
    efficiency: dict[str, Efficiency]
    instances: dict[str, Instance]
    accuracy: dict[str, AccuracyBand] = {}
    providers: dict[str, Provider] = {}
    runtime: dict[str, Runtime] = Field({}, description="'default' is used; overlays change it field by field")
    files: list[str] = []
    overrides: list[str] = Field([], description="'<id> from <file>' for each entry an overlay changed")

    def as_of_range(self) -> tuple[dt.date, dt.date]:
        dates = [e.as_of for e in (*self.devices.values(), *self.instances.values())]
        return min(dates), max(dates)
