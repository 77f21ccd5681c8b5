"""The costs of a whole training run besides its steps, and the host side that can hold the steps back.

    total = provisioning + setup + initialisation + steps × step + evaluation + checkpoint writes

- provisioning and setup: per provider (catalog `providers`; TPU slices may differ by device kind), none for
  a bare device with no instance;
- initialisation: `framework_init_s` once, plus `collective_init_s_per_node` × nodes (communicator set-up
  grows with the cluster);
- evaluation: `eval_share` × the training time (--eval-share);
- checkpoints: one write every `checkpoint_every_s` of training (--checkpoint-every; the last one at the end,
  at least one), each the trainable state (weights in their stored width plus the optimizer's state tensors)
  over `checkpoint_bandwidth` per writing node: a state split across the nodes (ZeRO or FSDP sharding, tensor
  or pipeline parallelism) is written by every node in parallel, DDP writes from one rank; training waits
  while it writes.

All of it is billed: the nodes run throughout. The defaults and their sources are catalog data
(`catalog/runtime.yaml`, `catalog/providers.yaml`).

Input pipeline: a profile whose input is an image ([batch, channels, height, width] floats) needs its
samples decoded and augmented on the host. The instance's vCPUs (one per device left to the training
processes) decode `image_samples_per_s_per_vcpu` at `image_reference_pixels`, scaled by the input's pixels.
`--loader-workers N` (the DataLoader's num_workers: N decoding processes per device) caps the decoding vCPUs
at N per device. On an accelerator the decoding overlaps the step, so only the shortfall waits; on a CPU
instance the same cores do both, so the decoding time adds to the step (however many processes do it).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from advisor.catalog.schema import Catalog, Device, Instance, Runtime
from advisor.estimator.config import Config
from advisor.estimator.memory import optimizer_states
from advisor.vocab import PARAM_BYTES

if TYPE_CHECKING:
    from advisor.profiler.schema import Profile

DEFAULT = "default"
_SHAPE = re.compile(r"\[([\d,\s]+)\]\s*(\w+)")
_CHANNELS = (1, 3, 4)


class RunOptions(BaseModel):
    """What a user may set for one question; None takes the catalog's default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    checkpoint_every_s: float | None = Field(None, ge=0, description="0: only the final checkpoint")
    eval_share: float | None = Field(None, ge=0, lt=1)
    loader_workers: int | None = Field(
        None, ge=1, description="image-decoding processes per device (DataLoader num_workers); None: every vCPU"
    )


class InputPipeline(BaseModel):
    pixels: float = Field(description="pixels of one input image")
    vcpus_per_node: int = Field(description="vCPUs that decode, per node")
    loader_workers: int | None = Field(None, description="decoding processes per device, when the user set them")
    samples_per_s: float = Field(description="what the hosts of all nodes can decode and augment")
    wait_s: float = Field(description="added to each step: the shortfall (accelerators) or the decoding (CPUs)")
    shared_cores: bool = Field(description="a CPU instance: decoding and training share the cores")


class RunCosts(BaseModel):
    provisioning_s: float
    setup_s: float
    init_s: float
    train_s: float
    eval_s: float
    eval_share: float
    checkpoints: int
    checkpoint_bytes: float = Field(description="one checkpoint: trainable state, all shards")
    checkpoint_write_s: float = Field(description="one write")
    checkpoint_s: float = Field(description="all writes")
    checkpoint_every_s: float
    total_s: float

    @property
    def startup_s(self) -> float:
        return self.provisioning_s + self.setup_s + self.init_s


def runtime_of(catalog: Catalog) -> Runtime | None:
    return catalog.runtime.get(DEFAULT)


def image_pixels(profile: Profile) -> float | None:
    """Pixels per image when the first input is a batch of images ([b, c, h, w] or [b, h, w, c] floats)."""
    if not profile.input_shapes:
        return None
    match = _SHAPE.search(profile.input_shapes[0])
    if not match or not match.group(2).startswith(("fp", "bf")):
        return None
    dims = [int(d) for d in match.group(1).split(",") if d.strip()]
    if len(dims) != 4:
        return None
    if dims[1] in _CHANNELS:
        return float(dims[2] * dims[3])
    if dims[3] in _CHANNELS:
        return float(dims[1] * dims[2])
    return None


def input_pipeline(
    profile: Profile,
    runtime: Runtime | None,
    device: Device,
    instance: Instance | None,
    config: Config,
    global_batch: int,
    step_s: float,
    workers: int | None = None,
) -> InputPipeline | None:
    """How the hosts keep up with an image model's steps; None when the input is not images or the host is
    unknown (no instance, or an instance without a vCPU count and no `workers`). `workers`: decoding processes per
    device (--loader-workers), at most one vCPU each; on a CPU instance they share the training cores, so they
    change nothing there."""
    pixels = image_pixels(profile)
    if pixels is None or runtime is None or instance is None:
        return None
    shared = device.kind == "cpu"
    if shared or workers is None:
        if not instance.vcpus:
            return None
        vcpus = instance.vcpus if shared else max(1, instance.vcpus - config.devices_per_node)
    else:  # the user's processes, on the vCPUs left to them where the instance's count is known
        vcpus = workers * config.devices_per_node
        if instance.vcpus:
            vcpus = min(vcpus, max(1, instance.vcpus - config.devices_per_node))
    rate = vcpus * runtime.image_samples_per_s_per_vcpu * runtime.image_reference_pixels / pixels * config.nodes
    decode_s = global_batch / rate
    wait = decode_s if shared else max(0.0, decode_s - step_s)
    return InputPipeline(
        pixels=pixels, vcpus_per_node=vcpus, loader_workers=workers, samples_per_s=rate, wait_s=wait,
        shared_cores=shared,
    )  # fmt: skip


def checkpoint_bytes(profile: Profile, precision: str) -> float:
    """Weights in their stored width plus the optimizer's state tensors (mixed-precision AdamW: 4 + 8 B per
    trainable parameter), and the frozen weights."""
    width = PARAM_BYTES[precision]
    states = optimizer_states(profile)
    return profile.parameters * width + profile.trainable_parameters * width * states


def run_costs(
    profile: Profile,
    catalog: Catalog,
    device: Device,
    instance: Instance | None,
    config: Config,
    train_s: float,
    options: RunOptions | None = None,
) -> RunCosts:
    """Every part of the run's wall time (see the module docstring); zero fixed costs without runtime data."""
    options = options or RunOptions()
    rt = runtime_of(catalog)
    if rt is None:
        return RunCosts(
            provisioning_s=0, setup_s=0, init_s=0, train_s=train_s, eval_s=0, eval_share=0, checkpoints=0,
            checkpoint_bytes=0, checkpoint_write_s=0, checkpoint_s=0, checkpoint_every_s=0, total_s=train_s,
        )  # fmt: skip
    provider = catalog.providers.get(instance.provider) if instance is not None else None
    if instance is None:
        provisioning = setup = 0.0  # a bare device: nothing to rent or start
    elif provider is not None:
        provisioning, setup = provider.provisioning_for(device.kind), provider.setup_s
    else:
        provisioning, setup = rt.provisioning_s, rt.setup_s
    init = rt.framework_init_s + rt.collective_init_s_per_node * config.nodes
    share = rt.eval_share if options.eval_share is None else options.eval_share
    eval_s = train_s * share
    every = rt.checkpoint_every_s if options.checkpoint_every_s is None else options.checkpoint_every_s
    count = max(1, math.ceil((train_s + eval_s) / every - 1e-9)) if every > 0 else 1
    state = checkpoint_bytes(profile, config.precision)
    # every node writes its own part when the state is split across them: a sharded optimizer (ZeRO, FSDP) or a
    # model split by tensor or pipeline parallelism (distributed checkpoints); DDP replicas write from one rank
    lay = config.layout
    split = lay.sharding != "none" or lay.tp * lay.pp > 1
    writers = config.nodes if split else 1
    write_s = state / (rt.checkpoint_bandwidth * writers)
    total = provisioning + setup + init + train_s + eval_s + count * write_s
    return RunCosts.model_construct(  # computed floats: no validation needed (thousands per recommendation)
        provisioning_s=provisioning,
        setup_s=setup,
        init_s=init,
        train_s=train_s,
        eval_s=eval_s,
        eval_share=share,
        checkpoints=count,
        checkpoint_bytes=state,
        checkpoint_write_s=write_s,
        checkpoint_s=count * write_s,
        checkpoint_every_s=every,
        total_s=total,
    )


def feed_note(feed: InputPipeline, global_batch: int) -> str:
    """The assumption line of an image model whose host holds its step back."""
    if feed.shared_cores:
        where = "on the training cores"
    elif feed.loader_workers is not None:
        where = f"in {feed.vcpus_per_node} processes per node (--loader-workers {feed.loader_workers})"
    else:
        where = f"on {feed.vcpus_per_node} vCPUs per node (more --loader-workers cannot help)"
    bound = "adds" if feed.shared_cores else "bounds the step: the devices wait"
    return (
        f"input pipeline: decoding and augmenting {global_batch} images of {feed.pixels:,.0f} pixels {where} "
        f"({feed.samples_per_s:,.0f} images/s) {bound} {feed.wait_s * 1e3:.3g} ms per step "
        f"(catalog/runtime.yaml image_samples_per_s_per_vcpu)"
    )
