"""Collectives over the right fabric, hierarchical across nodes (nccl-tests bus-bandwidth model).

For n ranks moving S bytes, a ring collective costs α + f(n) · S / busbw with f = 2(n−1)/n for an
all-reduce and (n−1)/n for reduce-scatter and all-gather. Across nodes the collective is done in two
levels: inside each node over its fabric (NVSwitch, NVLink, PCIe, ICI) on the full message, and between
nodes over the network on the per-device shard, where g devices share the node's network bandwidth,
which gives f(m) · S / B_net for m nodes. Bandwidths are the achievable fractions (efficiency profile)
of the catalog's per-direction link figures.

Parallel layouts run collectives over groups of ranks, not always the whole job: a group of n ranks
`stride` apart (tensor-parallel ranks are neighbours, data-parallel ones tp·cp apart) has `inner` of them in
each fast domain (the devices one NVSwitch/NVLink/ICI fabric joins: a node, or `fabric_domain_devices` when
the catalog says the domain spans nodes) and spans `outer` domains. The collective runs over the fabric among
the inner ranks, then over the network among the outer ones, where every device of a node moves its share at
the same time (the other groups run in lockstep), so each gets 1/per_node of the node's network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.catalog.schema import Device, Efficiency, Instance
from advisor.errors import UserError


@dataclass
class Fabric:
    intra_bw: float | None  # bytes/s per device inside a node, achievable
    intra_type: str
    inter_bw: float | None  # bytes/s per node between nodes, achievable
    inter_type: str
    latency_s: float
    per_node: int = 1  # devices per node (they share the node's network)
    domain: int = 1  # devices one fast fabric joins (a node, or more when the domain spans nodes)


def fabric_for(device: Device, eff: Efficiency, instance: Instance | None, per_node: int) -> Fabric:
    """The links a job on `per_node` devices per node uses. Without an instance: the device's own links.
    A fast domain larger than a node (GB200 NVL72, a TPU slice) counts only when the job uses whole nodes."""
    domain = per_node
    if instance is not None and per_node == round(instance.device_count) and instance.domain_devices > per_node:
        domain = int(instance.domain_devices)
    intra = instance.fabric if instance and instance.fabric else None
    if intra is None and domain > 1:
        intra = device.device_link or device.host_link
    network = instance.network if instance else None
    return Fabric(
        intra_bw=intra.bandwidth_per_direction * eff.device_link if intra else None,
        intra_type=intra.type if intra else "none",
        inter_bw=network.bandwidth_per_direction * eff.network if network else None,
        inter_type=network.type if network else "none",
        latency_s=eff.collective_latency_s,
        per_node=per_node,
        domain=domain,
    )


@dataclass
class Fabrics:
    """Several fabrics at once (the layout search evaluates many instances together): row i uses
    fabrics[index[i]]."""

    fabrics: list[Fabric]
    index: object  # numpy array of ints

    @property
    def per_node(self):
        import numpy as np

        return np.asarray([f.per_node for f in self.fabrics])[self.index]


def placement(n: int, stride: int, domain: int) -> tuple[int, int]:
    """(ranks of the group inside one fast domain, domains the group spans) for n ranks `stride` apart."""
    if n <= 1:
        return 1, 1
    inner = 1 if stride >= domain else min(n, max(1, domain // stride))
    return inner, math.ceil(n / inner)


def _ring(kind: str, n: int) -> float:
    if n <= 1:
        return 0.0
    return 2 * (n - 1) / n if kind == "all_reduce" else (n - 1) / n


def collective_parts(kind: str, nbytes: float, per_node: int, nodes: int, fabric: Fabric) -> tuple[float, float]:
    """(seconds inside the nodes, seconds between them) for one collective of `nbytes` (the full
    per-device message) over per_node × nodes ranks. The fabrics must exist (check_fabric)."""
    return _levels(kind, nbytes, per_node, nodes, per_node, fabric)


def _levels(kind: str, nbytes: float, inner: int, outer: int, per_node: int, fabric: Fabric) -> tuple[float, float]:
    if inner * outer <= 1 or nbytes <= 0:
        return 0.0, 0.0
    intra = inter = 0.0
    if inner > 1:
        intra = fabric.latency_s + _ring(kind, inner) * nbytes / fabric.intra_bw
    if outer > 1:
        inter = fabric.latency_s + _ring(kind, outer) * nbytes * per_node / (inner * fabric.inter_bw)
    return intra, inter


def group_parts(kind: str, nbytes: float, n: int, stride: int, fabric: Fabric) -> tuple[float, float]:
    """(seconds over the fabric, seconds over the network) for one collective of `nbytes` per device over a
    group of n ranks `stride` apart (see the module docstring)."""
    inner, outer = placement(n, stride, fabric.domain)
    return _levels(kind, nbytes, inner, outer, fabric.per_node, fabric)


def p2p_time(nbytes: float, n: int, stride: int, fabric: Fabric) -> tuple[float, bool]:
    """(seconds for one send of `nbytes` to the next rank of a group, whether it crosses the network): the
    slowest hop of a pipeline or a ring. Across the network all devices of a node send at once."""
    if n <= 1 or nbytes <= 0:
        return 0.0, False
    _inner, outer = placement(n, stride, fabric.domain)
    if outer > 1:
        return fabric.latency_s + nbytes * fabric.per_node / fabric.inter_bw, True
    return fabric.latency_s + nbytes / fabric.intra_bw, False


def collective_time(kind: str, nbytes: float, per_node: int, nodes: int, fabric: Fabric) -> float:
    """Seconds for one collective: the two levels run one after the other."""
    return sum(collective_parts(kind, nbytes, per_node, nodes, fabric))


def check_fabric(fabric: Fabric, per_node: int, nodes: int, where: str) -> None:
    """A job on several devices needs links between them: say which are missing, as a UserError."""
    if per_node > 1 and fabric.intra_bw is None:
        raise UserError(
            f"{where} has no link between its devices in the catalog, so {per_node} devices cannot be joined",
            "use --count 1, or add a fabric (or device_link) to the catalog entry",
        )
    if nodes > 1 and fabric.inter_bw is None:
        raise UserError(f"{where} has no network in the catalog, so --nodes {nodes} is impossible", "use --nodes 1")
