"""The public Python API: what the CLI calls, and what notebooks and scripts can call too.

    from advisor import api
    cat = api.catalog()
    prof = api.profile_from("gpt2_124m")
    est = api.estimate(prof, "p5.48xlarge", tokens=10e9)
    print(est.step_time_s, est.cost_usd)

Nothing here imports torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from advisor.catalog.load import load_catalog
from advisor.catalog.lookup import find
from advisor.catalog.schema import Catalog, Device, Instance
from advisor.errors import UserError
from advisor.estimator.config import Config, Workload
from advisor.estimator.estimate import Estimate
from advisor.estimator.estimate import estimate as _estimate
from advisor.estimator.runtime import RunOptions

if TYPE_CHECKING:
    from advisor.profiler.schema import Profile


def catalog(extra: list[Path] | None = None) -> Catalog:
    return load_catalog(extra)


def shipped_profiles_dir() -> Path:
    packaged = Path(__file__).resolve().parent / "_data" / "profiles"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[1] / "profiles"


def profile_from(name_or_path: str | Path):
    """Load a profile from a path, or by name from the shipped reference profiles."""
    from advisor.profiler.schema import load_profile

    return load_profile(find_profile(name_or_path))


def find_profile(name_or_path: str | Path) -> Path:
    """The file a profile argument names: a path, or a shipped reference profile's name."""
    path = Path(name_or_path)
    if path.exists() and not path.is_dir():
        return path  # a fifo or device too: the reader says what is wrong with it
    shipped = shipped_profiles_dir()
    for candidate in (shipped / f"{name_or_path}.yaml", shipped / str(name_or_path)):
        if candidate.is_file():
            return candidate
    names = sorted(p.stem for p in shipped.glob("*.yaml")) if shipped.is_dir() else []
    import difflib

    raise UserError(
        f"profile {str(name_or_path)!r} not found (no such file, and no shipped profile of that name)",
        f"give a profile path or one of: {', '.join(names) or 'none shipped'}",
        difflib.get_close_matches(str(name_or_path), names, n=3),
    )


def resolve_hardware(
    cat: Catalog, name: str, count: int | None = None, nodes: int = 1
) -> tuple[Device, Instance | None, int]:
    """A device or instance name -> (device, instance or None, devices per node), checked."""
    entry = find(cat, name)
    if nodes < 1:
        raise UserError(f"--nodes must be at least 1, got {nodes}")
    if isinstance(entry, Device):
        if nodes > 1:
            raise UserError(
                f"--nodes {nodes} needs an instance (it brings the network between nodes); {entry.id} is a device",
                f"pick an instance with {entry.id}, e.g. one from 'advisor catalog show {entry.id}'",
            )
        check_node_count(cat, entry, count or 1)
        return entry, None, count or 1
    device = cat.devices[entry.device]
    have = int(round(entry.device_count)) if device.kind != "cpu" else 1
    per_node = count or have
    if per_node > have:
        raise UserError(
            f"--count {per_node} is more than the {have} device{'s' * (have != 1)} of {entry.id}",
            f"use --count {have} or less",
        )
    if count is not None and count < 1:
        raise UserError(f"--count must be at least 1, got {count}")
    if nodes > entry.max_nodes:
        raise UserError(
            f"--nodes {nodes} is more than {entry.id} allows ({entry.max_nodes})",
            "use fewer nodes or an instance with a cluster network",
        )
    return device, entry, per_node


def check_node_count(cat: Catalog, device: Device, count: int) -> None:
    """`-H DEVICE --count N`: N devices in one node, so at most what the catalog's largest node of that device
    holds (a device no instance rents is not checked)."""
    from advisor.estimator.fit import node_devices

    if count < 1:
        raise UserError(f"--count must be at least 1, got {count}")
    most, holder = node_devices(cat, device)
    if holder is None or count <= most:
        return
    nodes = -(-count // most)
    raise UserError(
        f"--count {count} is more than one node of {device.id} holds: the catalog's largest, {holder.id}, has {most}",
        f"use --count {most} or less, or -H {holder.name} --nodes {nodes} for {nodes * most} devices",
    )


def check_training(device: Device, instance: Instance | None) -> None:
    if not device.training:
        where = f" ({instance.id})" if instance is not None else ""
        raise UserError(
            f"{device.id}{where} is not a training device (catalog: training: false, e.g. an inference chip)",
            "pick a device meant for training; 'advisor recommend' never proposes it",
        )


def estimate(
    profile: Profile,
    hardware: str,
    *,
    count: int | None = None,
    nodes: int = 1,
    precision: str | None = None,
    strategy: str | None = None,
    checkpointing: bool = False,
    tp: int = 1,
    pp: int = 1,
    vpp: int = 1,
    cp: int = 1,
    sequence_parallel: bool | None = None,
    recompute: str | None = None,
    micro_batch: int | None = None,
    global_batch: int | None = None,
    samples: float | None = None,
    epochs: float | None = None,
    steps: float | None = None,
    tokens: float | None = None,
    spot: bool = False,
    cat: Catalog | None = None,
    run: RunOptions | None = None,
    kernels: str = "auto",
) -> Estimate:
    """One configuration, as `advisor estimate` answers it: `hardware` (a device or an instance) × nodes,
    running the layout tp × pp × cp × dp with dp = devices / (tp·pp·cp). `strategy`
    (single|ddp|zero1|zero2|fsdp) is how the data-parallel replicas shard; `recompute` none|selective|full
    (`checkpointing` is full); sequence parallelism is on by default whenever tp > 1. `run` sets the checkpoint
    interval and evaluation share; `kernels` eager|fused|auto whether the blocks' elementwise ops run as eager
    PyTorch or a framework's fused kernels (auto: fused from 1B parameters and under fp8). A configuration that does not
    fit has `fits` false, no time or cost, and `to_fit`: what would fit."""
    from advisor.vocab import KERNELS, check_choice

    cat = cat or catalog()
    device, instance, per_node = resolve_hardware(cat, hardware, count, nodes)
    check_training(device, instance)
    config = config_for(
        device, instance, per_node, nodes, precision or profile.precision, strategy, checkpointing, tp, pp, vpp, cp,
        sequence_parallel, recompute, micro_batch, global_batch, spot,
    )  # fmt: skip
    check_choice(kernels, KERNELS, "--kernels")
    config = config.model_copy(update={"kernels": kernels})
    if spot and instance is not None and instance.hourly_usd(spot=True) is None:
        raise UserError(f"{instance.id} has no spot price in the catalog", "use --pricing on-demand")
    workload = Workload(samples=samples, epochs=epochs, steps=steps, tokens=tokens)
    est = _estimate(profile, cat, config, workload, run=run)
    if not est.fits:
        from advisor.estimator.fit import ways_to_fit

        est.to_fit = ways_to_fit(profile, cat, est.config)
    return est


def config_for(
    device: Device,
    instance: Instance | None,
    per_node: int,
    nodes: int,
    precision: str,
    strategy: str | None,
    checkpointing: bool,
    tp: int = 1,
    pp: int = 1,
    vpp: int = 1,
    cp: int = 1,
    sequence_parallel: bool | None = None,
    recompute: str | None = None,
    micro_batch: int | None = None,
    global_batch: int | None = None,
    spot: bool = False,
) -> Config:
    """The Config of one configuration, its layout checked for the devices (parallel/*.py check the model)."""
    from advisor.estimator.layout import layout_for
    from advisor.vocab import RECOMPUTES, STRATEGIES, check_choice

    check_choice(strategy, STRATEGIES, "--strategy")
    check_choice(recompute, RECOMPUTES, "--recompute")
    for value, option in ((tp, "--tp"), (pp, "--pp"), (vpp, "--vpp"), (cp, "--cp")):
        if value < 1:
            raise UserError(f"{option} must be at least 1, got {value}")
    world = per_node * nodes
    layout = layout_for(world, tp, pp, vpp, cp, strategy, recompute, sequence_parallel, checkpointing)
    return Config(
        device=device.id,
        instance=instance.id if instance else None,
        devices_per_node=per_node,
        nodes=nodes,
        precision=precision,
        layout=layout,
        micro_batch=micro_batch,
        global_batch=global_batch,
        spot=spot,
    )


def search(
    profile: Profile,
    hardware: str,
    *,
    count: int | None = None,
    nodes: int = 1,
    precision: str | None = None,
    global_batch: int | None = None,
    top: int = 10,
    cat: Catalog | None = None,
):
    """Every valid layout of `hardware` × nodes for `profile`, fastest first: (the estimate of the best one,
    the ranked layouts that fit as rows, how many layouts were evaluated)."""
    from advisor.estimator.ranking import ranked_layouts

    cat = cat or catalog()
    device, instance, per_node = resolve_hardware(cat, hardware, count, nodes)
    check_training(device, instance)
    return ranked_layouts(profile, cat, device, instance, per_node, nodes, precision or profile.precision,
                          global_batch, top)  # fmt: skip


def recommend(
    profile: Profile,
    *,
    samples: float | None = None,
    epochs: float | None = None,
    steps: float | None = None,
    tokens: float | None = None,
    constraints=None,
    top: int = 10,
    cat: Catalog | None = None,
):
    """Every catalog configuration for `profile` on the workload, ranked under `constraints`
    (`advisor.recommender.Constraints`: deadline_s, budget_usd, objective, providers, ...)."""
    from advisor.recommender.model import Constraints
    from advisor.recommender.rank import recommend as _recommend

    workload = Workload(samples=samples, epochs=epochs, steps=steps, tokens=tokens)
    return _recommend(profile, cat or catalog(), workload, constraints or Constraints(), top=top)


def compare(
    profile: Profile,
    *,
    samples: float | None = None,
    epochs: float | None = None,
    steps: float | None = None,
    tokens: float | None = None,
    constraints=None,
    cat: Catalog | None = None,
):
    """The best CPU, GPU, TPU and other-accelerator options side by side ('do I need a GPU?')."""
    from advisor.recommender.compare import compare as _compare
    from advisor.recommender.model import Constraints

    workload = Workload(samples=samples, epochs=epochs, steps=steps, tokens=tokens)
    return _compare(profile, cat or catalog(), workload, constraints or Constraints())
