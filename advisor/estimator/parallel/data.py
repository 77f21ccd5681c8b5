"""Data parallelism and its sharding (DDP, ZeRO stages 1 and 2, FSDP = ZeRO-3): memory and traffic.

The replicas that hold the same weights and reduce gradients together are the data- and context-parallel
ranks, N = dp·cp (Megatron-LM reduces over both). Each shards Ψ, the parameters one device holds after
tensor and pipeline parallelism have divided the model.

Bytes per parameter (w weights, g gradients, s optimizer state; mixed-precision Adam), as each
implementation keeps them:
- DDP (PyTorch, autocast): fp32 weights and gradients, Adam's m and v: 4 + 4 + 8 = 16 Ψ, plus the gradient
  buckets DDP all-reduces from (another 4 Ψ).
- ZeRO-1 / ZeRO-2 (DeepSpeed, Megatron's distributed optimizer): 16-bit weights and gradients, the fp32 master
  copy with m and v in the optimizer (Rajbhandari et al. 2020, §5): stage 1 `4Ψ + 12Ψ/N`, stage 2
  `2Ψ + 14Ψ/N`.
- FSDP full shard (ZeRO-3): everything sharded, `16Ψ/N`, plus two gathered units (the one computing and the
  prefetched next) in the compute dtype.
Pure bf16 keeps 2 + 2 + 4, fp32 4 + 4 + 8, in every case.

Traffic per step, each collective over the N replicas (placed tp apart, so inside a node when tp·cp·dp fits):
- DDP: one all-reduce of the gradients, bucket by bucket during the last micro-batch's backward pass; the
  last bucket is never hidden.
- ZeRO-1: a reduce-scatter of the gradients (hidden the same way) and an all-gather of the updated 16-bit
  weights, hidden behind the next step's first forward pass.
- ZeRO-2: the reduce-scatter on every micro-batch (the full gradient is never kept), each hidden behind its
  backward pass, and the same all-gather.
- FSDP: per micro-batch an all-gather of the weights for the forward pass, another for the backward pass and a
  reduce-scatter of the gradients, each hidden behind the pass it serves (prefetching).
- FSDP under a pipeline (pp > 1) runs as PyTorch's pipelining schedules run it: the weights are gathered once
  and kept until the step's last backward (torchtitan: no resharding after forward with PP), the gradients
  accumulate unsharded and are reduce-scattered once, after the last backward; so its traffic is ZeRO-1's in the
  compute dtype, and a device holds the stage's gathered weights and fp32 gradients during the step.
The optimizer steps on the 1/N of the state a sharded rank owns.
"""

from __future__ import annotations

import numpy as np

from advisor.estimator.comm import Fabric, Fabrics, group_parts
from advisor.vocab import COMPUTE_DTYPE, DTYPE_BYTES, PARAM_BYTES, SHARDINGS

DDP_BUCKET_BYTES = 25e6  # torch DistributedDataParallel's default bucket_cap_mb
LEVEL = {name: i for i, name in enumerate(SHARDINGS)}  # none 0, zero1 1, zero2 2, fsdp 3


def widths(precision: str, states: float) -> dict[str, float]:
    """Bytes per parameter: full (w32, g32, s32: DDP and FSDP) and ZeRO-1/2's 16-bit ones (w16, g16, s16)."""
    width = PARAM_BYTES[precision]
    compute = DTYPE_BYTES[COMPUTE_DTYPE[precision]]
    master = width if width > compute else 0.0
    return {
        "w32": width,
        "g32": width,
        "s32": states * width,
        "w16": min(width, compute),
        "g16": min(width, compute),
        "s16": states * width + master,
        "compute": compute,
    }


def state_memory(psi, psi_train, level, replicas, w: dict[str, float], pp=1):
    """(weights, gradients, optimizer state) bytes per device; every argument may be an array."""
    zero12 = (level == 1) | (level == 2)
    n = np.maximum(replicas, 1)
    piped = (level == 3) & (np.asarray(pp) > 1) & (n > 1)  # FSDP under a pipeline: gathered for the step
    weights = psi * np.where(zero12, w["w16"], w["w32"]) / np.where(level >= 3, n, 1)
    weights = weights + np.where(piped, psi * w["compute"], 0.0)
    grads = psi_train * np.where(zero12, w["g16"], w["g32"]) / np.where((level >= 2) & ~piped, n, 1)
    states = psi_train * np.where(zero12, w["s16"], w["s32"]) / np.where(level >= 1, n, 1)
    return weights, grads, states


def temporaries(psi, psi_train, level, replicas, blocks_here, w: dict[str, float], pp=1):
    """DDP's gradient buckets, or FSDP's two gathered units (a unit = one repeated block's weights; under a
    pipeline the whole stage stays gathered instead, counted with the weights)."""
    many = replicas > 1
    buckets = np.where(many & (level == 0), psi_train * w["g32"], 0.0)
    per_micro = many & (level == 3) & (np.asarray(pp) == 1)
    units = np.where(per_micro, 2 * psi / np.maximum(blocks_here, 1) * w["compute"], 0.0)
    return buckets + units


class Groups:
    """The groups of many layouts (n ranks `stride` apart, on each row's fabric), indexed once, so that each
    collective over them costs one table look-up: the ring model is latency + linear in the bytes, so the time
    for one byte of each distinct (fabric, n, stride) scales to every message size."""

    def __init__(self, n, stride, fabric: Fabric | Fabrics):
        n, stride = np.broadcast_arrays(np.asarray(n, np.int64), np.asarray(stride, np.int64))
        if isinstance(fabric, Fabrics):
            self.fabrics, which = fabric.fabrics, np.broadcast_to(fabric.index, n.shape)
        else:
            self.fabrics, which = [fabric], np.zeros(n.shape, dtype=np.int64)
        self.ns, self.strides = _distinct(n), _distinct(stride)
        self.size = len(self.ns) * len(self.strides)
        self.pair = (
            which * self.size + np.searchsorted(self.ns, n) * len(self.strides) + np.searchsorted(self.strides, stride)
        )
        self.present = _distinct(self.pair)
        self.latency = np.asarray([f.latency_s for f in self.fabrics])[which]
        self.ones: dict[str, np.ndarray] = {}

    def one_byte(self, name: str, per_byte) -> np.ndarray:
        """Per row, (intra, inter) seconds of `per_byte` for one byte (memoized by `name`)."""
        if name not in self.ones:
            table = np.zeros((len(self.fabrics) * self.size, 2))
            if len(_PER_BYTE) > 100_000:
                _PER_BYTE.clear()
            for k in self.present:  # only the groups some layout has
                rest = k % self.size
                f = self.fabrics[k // self.size]
                n_k, s_k = int(self.ns[rest // len(self.strides)]), int(self.strides[rest % len(self.strides)])
                key = (name, *vars(f).values(), n_k, s_k)
                value = _PER_BYTE.get(key)
                if value is None:
                    value = _PER_BYTE[key] = per_byte(f, n_k, s_k)
                table[k] = value
            self.ones[name] = table[self.pair]
        return self.ones[name]

    def time(self, name: str, per_byte, nbytes) -> tuple[np.ndarray, np.ndarray]:
        ones = self.one_byte(name, per_byte)
        b = np.broadcast_to(np.asarray(nbytes, float), self.pair.shape)
        out = []
        for level in range(2):
            t = ones[..., level]
            out.append(np.where((b > 0) & (t > 0), self.latency + (t - self.latency) * b, 0.0))
        return out[0], out[1]

    def collective(self, kind: str, nbytes) -> tuple[np.ndarray, np.ndarray]:
        """group_parts over arrays: (intra, inter) seconds. All-gather and reduce-scatter cost the same."""
        ring = "all_reduce" if kind == "all_reduce" else "reduce_scatter"
        return self.time(ring, lambda f, n_, s_: group_parts(ring, 1.0, n_, s_, f), nbytes)


def _group(kind: str, nbytes, n, stride, fabric):
    """group_parts over arrays for one collective: (intra, inter) seconds."""
    return Groups(n, stride, fabric).collective(kind, nbytes)


_PER_BYTE: dict = {}  # (what, fabric, n, stride) -> seconds for one byte: the same groups recur in every pass


def _distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of an array of small non-negative integers, without sorting it."""
    if values.size == 0:
        return values
    return np.flatnonzero(np.bincount(values.ravel()))


def traffic(psi, psi_train, level, replicas, stride, m, fwd, bwd, w: dict[str, float], fabric, pp=1) -> dict:
    """Data-parallel collectives of one step on one device: total, exposed, intra/inter seconds and bytes.
    `fwd` and `bwd` are one micro-batch's forward and backward pass on the device (what hides them)."""
    zero12 = (level == 1) | (level == 2)
    grads = psi_train * np.where(zero12, w["g16"], w["g32"])
    weights16 = psi * w["w16"]
    gathered = psi * w["compute"]
    groups = Groups(replicas, stride, fabric)
    ar = groups.collective("all_reduce", grads)
    rs = groups.collective("reduce_scatter", grads)
    ag16 = groups.collective("all_gather", weights16)
    agc = groups.collective("all_gather", gathered)
    bucket_ar = sum(groups.collective("all_reduce", np.minimum(grads, DDP_BUCKET_BYTES)))
    bucket_rs = sum(groups.collective("reduce_scatter", np.minimum(grads, DDP_BUCKET_BYTES)))
    t_ar, t_rs, t_ag16, t_agc = sum(ar), sum(rs), sum(ag16), sum(agc)
    per_micro_rs = np.maximum(t_rs - bwd, bucket_rs)
    piped = (level == 3) & (np.asarray(pp) > 1)
    exposed = np.select(
        [level == 0, level == 1, level == 2, piped],
        [
            np.maximum(t_ar - bwd, bucket_ar),
            per_micro_rs + np.maximum(0.0, t_ag16 - fwd),
            m * per_micro_rs + np.maximum(0.0, t_ag16 - fwd),
            per_micro_rs + np.maximum(0.0, t_agc - fwd),
        ],
        m * (np.maximum(0.0, t_agc - fwd) + np.maximum(0.0, t_agc + t_rs - bwd)),
    )
    # how many of each collective a step runs, per sharding
    n_ar = np.where(level == 0, 1.0, 0.0)
    n_rs = np.select([level == 1, level == 2, piped, level == 3], [1.0, m, 1.0, m], 0.0)
    n_ag16 = np.where(zero12, 1.0, 0.0)
    n_agc = np.select([piped, level == 3], [1.0, 2.0 * m], 0.0)
    intra = n_ar * ar[0] + n_rs * rs[0] + n_ag16 * ag16[0] + n_agc * agc[0]
    inter = n_ar * ar[1] + n_rs * rs[1] + n_ag16 * ag16[1] + n_agc * agc[1]
    moved = (n_ar + n_rs) * grads + n_ag16 * weights16 + n_agc * gathered
    none = replicas <= 1
    zero = np.zeros(np.shape(intra))
    return {
        "total_s": np.where(none, zero, intra + inter),
        "exposed_s": np.where(none, zero, exposed),
        "intra_s": np.where(none, zero, intra),
        "inter_s": np.where(none, zero, inter),
        "bytes": np.where(none, zero, moved),
    }


def optimizer_share(psi_train, total_train: float, level, replicas):
    """The share of the whole model's optimizer work one device does."""
    return psi_train / max(total_train, 1.0) / np.where(level >= 1, np.maximum(replicas, 1), 1)
