"""What every layout of one profile on one device under one precision shares, worked out once.

The recommender and the layout search evaluate thousands of layouts of the same (profile, device, instance,
precision): the op table, the op roles, the parameter and activation parts, the fabric and the memory
capacity are the same for all of them. `setup_for` builds them (memoized in the caller's cache dict).
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.catalog.schema import Catalog, Device, Efficiency, Instance
from advisor.errors import UserError
from advisor.estimator.comm import Fabric, check_fabric, fabric_for
from advisor.estimator.parallel import data
from advisor.estimator.parallel.tensor import Roles, parameter_parts, roles
from advisor.estimator.passes import OpTable, op_table
from advisor.estimator.roofline import peak_for
from advisor.profiler.schema import ActivationParts, Linear, Profile, Structure
from advisor.profiler.structure import derive_structure
from advisor.vocab import BLOCK_MATMUL_DTYPE, COMPUTE_DTYPE, DTYPE_BYTES, OPTIMIZER_STATES

# Korthikanti et al. 2022 (Table 2): of a GPT block's 34·s·b·h bytes of activations, 10 stay whole under
# tensor parallelism without sequence parallelism: the split of profiles that did not record their own.
KORTHIKANTI_REPLICATED = 10 / 34

FRAMEWORK_PARAMETERS = 1e9  # models this large are trained with a large-scale framework (Megatron, NeMo, torchtitan)


def uses_framework(kernels: str, parameters: float, fp8: bool) -> bool:
    """Whether a run uses a large-scale framework's fused kernels (`--kernels fused`) or eager PyTorch
    (`eager`). `auto` is a property of the model, never of the layout, so that no layout wins by implying a
    framework: models of FRAMEWORK_PARAMETERS or more, and FP8 recipes (Transformer Engine)."""
    if kernels != "auto":
        return kernels == "fused"
    return fp8 or parameters >= FRAMEWORK_PARAMETERS


@dataclass
class Setup:
    profile: Profile
    device: Device
    eff: Efficiency
    instance: Instance | None
    precision: str
    structure: Structure | None
    roles: Roles
    table: OpTable
    params: dict[str, float]
    acts: ActivationParts  # as profiled
    act_scale: float  # activation width under the target precision ÷ the profiled one
    blocks: int  # repeated blocks (1 when nothing repeats)
    fsdp_units: int  # what FSDP wraps: every repeated block, of every repeated pattern
    widths: dict[str, float]
    compute_width: float  # bytes of one activation value in the compute dtype
    train_share: float  # trainable / all parameters
    capacity: float | None
    reserve: float
    fabric: Fabric
    fp8: bool
    has_scores: bool  # the attention keeps score matrices (unfused): selective recomputation frees them
    model_flops: dict  # forward + backward FLOPs of the whole model per micro-batch: fixed + per sample
    peak: float  # the dense matrix peak in the compute dtype (what MFU is measured against)
    framework: bool  # a large-scale framework's fused kernels (step.uses_framework), not eager PyTorch
    fused: float  # the share of the blocks' eager elementwise time kept: the family's fused_elementwise, or 1
    tp_overlap: float  # the family's tp_overlap


def check_precision(device: Device, precision: str) -> None:
    dtype = COMPUTE_DTYPE[precision]
    have = device.dtypes()
    if dtype == "tf32" and "tf32" not in have and "fp32" in have:
        return  # tf32 requested where there is none: it computes in fp32 (an assumption is recorded)
    block = BLOCK_MATMUL_DTYPE.get(precision)
    if block and not device.matrix_flops.get(block):
        options = [p for p, d in COMPUTE_DTYPE.items() if d in have and p not in BLOCK_MATMUL_DTYPE]
        raise UserError(
            f"{device.name} ({device.id}) has no {block} tensor units (no {block} matrix peak in the catalog), so "
            f"--precision {precision} cannot run on it",
            f"use --precision {' or '.join(o for o in options if o.endswith('-mixed')) or options[0]}",
        )
    if dtype not in have:
        options = [p for p, d in COMPUTE_DTYPE.items() if d in have and p not in BLOCK_MATMUL_DTYPE]
        raise UserError(
            f"{device.name} ({device.id}) cannot compute in {dtype} (precision {precision})",
            f"use --precision {' or '.join(options)}",
        )


def activation_scale(profiled: str, target: str) -> float:
    """Activations scale with the compute dtype's width when a profile is reused at another precision."""
    return DTYPE_BYTES[COMPUTE_DTYPE[target]] / DTYPE_BYTES[COMPUTE_DTYPE[profiled]]


def capacity(device: Device, instance: Instance | None, per_node: int) -> float | None:
    """Bytes one device may use: its own memory, or for a CPU its share of the host's memory."""
    if device.memory_bytes is not None:
        return device.memory_bytes
    if instance is not None and instance.host_memory_bytes:
        return instance.host_memory_bytes / max(per_node, 1)
    return None


def repeated_blocks(profile: Profile) -> int:
    """How many repeated blocks (transformer layers, residual blocks) the model has, from the profile's
    module patterns: ops under `layers.*` ran once per block, so the fewest calls of any forward op under
    that pattern is the number of blocks. Summed over distinct patterns; 1 when nothing repeats."""
    fewest: dict[str, int] = {}
    for op in profile.ops:
        if op.phase != "forward" or "*" not in op.module:
            continue
        prefix = op.module[: op.module.index("*") + 1]
        fewest[prefix] = min(fewest.get(prefix, op.count), op.count)
    return max(1, sum(fewest.values()))


def optimizer_states(profile: Profile) -> float:
    """Optimizer state tensors per parameter: known optimizers by name, else the profile's own ratio."""
    known = OPTIMIZER_STATES.get(profile.optimizer)
    if known is not None:
        return known
    mem = profile.memory
    return mem.optimizer_state_bytes / mem.parameter_bytes if mem.parameter_bytes else 2.0


def structure_of(profile: Profile) -> Structure | None:
    """The profile's structure, derived from its records for profiles written before the profiler stored it."""
    if profile.structure is not None:
        return profile.structure
    return derive_structure(profile.ops, profile.batch_size, profile.tokens_per_sample, fitted=profile.linear_in_batch)


def _scaled(line: Linear, factor: float) -> Linear:
    return Linear(fixed=line.fixed * factor, per_sample=line.per_sample * factor)


def activation_parts(profile: Profile, blocks: int) -> ActivationParts:
    """The profile's saved tensors by where they were saved; for profiles without the split, every saved
    tensor is taken to be inside the blocks, split 10 : 24 (Korthikanti), and the block inputs are what the
    profile's checkpoint_bytes keeps beyond one block."""
    mem = profile.memory
    if mem.activation_parts is not None:
        return mem.activation_parts
    total, kept = mem.activation_bytes, mem.checkpoint_bytes
    one = _scaled(total, 1 / blocks)
    inputs = Linear(fixed=max(0.0, kept.fixed - one.fixed), per_sample=max(0.0, kept.per_sample - one.per_sample))
    return ActivationParts(
        block_replicated=_scaled(total, KORTHIKANTI_REPLICATED),
        block_sharded=_scaled(total, 1 - KORTHIKANTI_REPLICATED),
        block_inputs=inputs,
    )


def framework_activations(profile: Profile, acts: ActivationParts, structure: Structure | None) -> ActivationParts:
    """The saved tensors of the blocks under a large-scale framework: at most Korthikanti et al.'s 34·s·h
    bytes per sample and block (their Table 2 counts bytes of 16-bit activations: 10 hidden-wide, 24 the
    rest; scaled by the profile's activation width over 2), and no attention scores when the model's attention
    is one fused kernel (flash attention keeps none; a model that writes its scores out, as Megatron-LM did
    before flash attention, keeps them: Korthikanti's 5·a·s/h term). Eager PyTorch saves more (each unfused
    elementwise op's input); the profile's own figures stay where they are smaller."""
    if structure is None or not structure.seq_len or not structure.hidden:
        return acts
    width = DTYPE_BYTES[COMPUTE_DTYPE[profile.precision]]
    unit = structure.seq_len * structure.hidden * structure.blocks * width / 2  # s·h bytes, all blocks

    def capped(line: Linear, share: float) -> Linear:
        return Linear(fixed=line.fixed, per_sample=min(line.per_sample, share * unit))

    return acts.model_copy(
        update={
            "block_replicated": capped(acts.block_replicated, 10),
            "block_sharded": capped(acts.block_sharded, 24),
            "block_scores": acts.block_scores
            if structure.attention == "unfused"
            else Linear(fixed=acts.block_scores.fixed, per_sample=0.0),
        }
    )


def setup_for(
    profile: Profile,
    device: Device,
    eff: Efficiency,
    instance: Instance | None,
    precision: str,
    per_node: int,
    nodes: int,
    cache: dict | None = None,
    kernels: str = "auto",
) -> Setup:
    """The shared part of every layout; `cache` (a dict reused across calls for the same profile) memoizes.
    `kernels` (auto|eager|fused, see step.uses_framework) says whether a framework's fused kernels run."""
    key = ("setup", id(profile), device.id, eff.id, instance.id if instance else None, precision, per_node,
           device.memory_bandwidth, kernels)  # fmt: skip
    if cache is not None and key in cache:
        setup = cache[key]
        check_fabric(setup.fabric, per_node, nodes, instance.id if instance else device.id)
        return setup
    check_precision(device, precision)
    fabric = fabric_for(device, eff, instance, per_node)
    check_fabric(fabric, per_node, nodes, instance.id if instance else device.id)
    structure = _cached(cache, ("structure", id(profile)), lambda: structure_of(profile))
    op_roles = _cached(cache, ("roles", id(profile)), lambda: roles(profile, structure))
    blocks = structure.blocks if structure is not None else 1
    fp8 = precision in BLOCK_MATMUL_DTYPE
    framework = uses_framework(kernels, profile.parameters, fp8)
    acts = _cached(cache, ("acts", id(profile)), lambda: activation_parts(profile, blocks))
    if uses_framework(kernels, profile.parameters, False):  # by model only: the same for every setup of a search
        acts = _cached(cache, ("framework-acts", id(profile)), lambda: framework_activations(profile, acts, structure))
    cap = capacity(device, instance, per_node)
    setup = Setup(
        profile=profile,
        device=device,
        eff=eff,
        instance=instance,
        precision=precision,
        structure=structure,
        roles=op_roles,
        table=_cached(
            cache,
            ("table", id(profile), device.id, eff.id, precision, device.memory_bandwidth),
            lambda: op_table(profile, op_roles, device, eff, precision),
        ),
        params=parameter_parts(profile, structure),
        acts=acts,
        act_scale=activation_scale(profile.precision, precision),
        blocks=blocks,
        fsdp_units=_cached(cache, ("units", id(profile)), lambda: repeated_blocks(profile)),
        widths=data.widths(precision, optimizer_states(profile)),
        compute_width=DTYPE_BYTES[COMPUTE_DTYPE[precision]],
        train_share=profile.trainable_parameters / max(profile.parameters, 1),
        capacity=cap,
        reserve=eff.memory_reserve_bytes + eff.memory_reserve_fraction * (cap or 0.0),
        fabric=fabric,
        fp8=fp8,
        has_scores=acts.block_scores.per_sample > 0,
        model_flops=_cached(cache, ("flops", id(profile)), dict),
        peak=peak_for(device, COMPUTE_DTYPE[precision], "matrix")[0] or device.peak("fp32", "vector"),
        framework=framework,
        fused=eff.fused_elementwise if framework else 1.0,
        tp_overlap=eff.tp_overlap,
    )
    if cache is not None:
        cache[key] = setup
    return setup


def model_flops(setup: Setup, micro: int) -> float:
    """Forward + backward FLOPs of the whole model for one micro-batch (what MFU counts)."""
    line = setup.model_flops.get("line")
    if line is None:
        ops = [o for o in setup.profile.ops if o.phase != "optimizer"]
        line = setup.model_flops["line"] = (sum(o.flops.fixed for o in ops), sum(o.flops.per_sample for o in ops))
    return line[0] + line[1] * micro


def _cached(cache: dict | None, key, make):
    if cache is None:
        return make()
    if key not in cache:
        cache[key] = make()
    return cache[key]


def stack_columns(setups: list[Setup]) -> dict:
    """The fields `stack` turns into arrays, one value per setup (worked out once per search)."""
    import numpy as np

    def column(get, dtype=float):
        return np.asarray([get(s) for s in setups], dtype=dtype)

    first = setups[0]
    return {
        "capacity": column(lambda s: np.inf if s.capacity is None else s.capacity),
        "reserve": column(lambda s: s.reserve),
        "widths": {k: column(lambda s, k=k: s.widths[k]) for k in first.widths},
        "compute_width": column(lambda s: s.compute_width),
        "act_scale": column(lambda s: s.act_scale),
        "fp8": column(lambda s: s.fp8, dtype=bool),
        "peak": column(lambda s: s.peak),
        "framework": column(lambda s: s.framework, dtype=bool),
        "fused": column(lambda s: s.fused),
        "tp_overlap": column(lambda s: s.tp_overlap),
    }


def stack(setups: list[Setup], which, columns: dict | None = None) -> Setup:
    """One Setup for rows of several setups of the same profile (row i is setups[which[i]]): the fields that
    differ between instances and precisions become arrays over the rows, so that `step_arrays` and
    `memory_arrays` evaluate them all in one pass. `columns` (stack_columns) may be passed to save work."""
    import dataclasses

    import numpy as np

    from advisor.estimator.comm import Fabrics

    cols = columns or stack_columns(setups)
    which = np.asarray(which)
    return dataclasses.replace(
        setups[0],
        capacity=cols["capacity"][which],
        reserve=cols["reserve"][which],
        widths={k: v[which] for k, v in cols["widths"].items()},
        compute_width=cols["compute_width"][which],
        act_scale=cols["act_scale"][which],
        fp8=cols["fp8"][which],
        peak=cols["peak"][which],
        framework=cols["framework"][which],
        fused=cols["fused"][which],
        tp_overlap=cols["tp_overlap"][which],
        fabric=Fabrics([s.fabric for s in setups], which),
    )


def setup_from_catalog(profile: Profile, catalog: Catalog, config, cache: dict | None = None) -> Setup:
    from advisor.estimator.estimate import host_share, scaled_device

    device = catalog.devices[config.device]
    eff = catalog.efficiency[device.efficiency]
    instance = catalog.instances.get(config.instance) if config.instance else None
    device = scaled_device(device, host_share(device, instance))
    return setup_for(
        profile, device, eff, instance, config.precision, config.devices_per_node, config.nodes, cache, config.kernels
    )
