"""Collectives over the right fabric, hierarchical across nodes (nccl-tests bus-bandwidth model).

For n ranks moving S bytes, a ring collective costs α + f(n) · S / busbw with f = 2(n−1)/n for an
all-reduce and (n−1)/n for reduce-scatter and all-gather. Across nodes the collective is done in two
levels: inside each node over its fabric (NVSwitch, NVLink, PCIe, ICI) on the full message, and between
nodes over the network on the per-device shard, where g devices share the node's network bandwidth,
which gives f(m) · S / B_net for m nodes. Bandwidths are the achievable fractions (efficiency profile)
of the catalog's per-direction link figures.
"""

from __future__ import annotations

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


def fabric_for(device: Device, eff: Efficiency, instance: Instance | None, per_node: int) -> Fabric:
    """The links a job on `per_node` devices per node uses. Without an instance: the device's own links."""
    intra = instance.fabric if instance and instance.fabric else None
    if intra is None and per_node > 1:
        intra = device.device_link or device.host_link
    network = instance.network if instance else None
    return Fabric(
        intra_bw=intra.bandwidth_per_direction * eff.device_link if intra else None,
        intra_type=intra.type if intra else "none",
        inter_bw=network.bandwidth_per_direction * eff.network if network else None,
        inter_type=network.type if network else "none",
        latency_s=eff.collective_latency_s,
    )


def _ring(kind: str, n: int) -> float:
    if n <= 1:
        return 0.0
    return 2 * (n - 1) / n if kind == "all_reduce" else (n - 1) / n


def collective_parts(kind: str, nbytes: float, per_node: int, nodes: int, fabric: Fabric) -> tuple[float, float]:
    """(seconds inside the nodes, seconds between them) for one collective of `nbytes` (the full
    per-device message) over per_node × nodes ranks. The fabrics must exist (check_fabric)."""
    if per_node * nodes <= 1 or nbytes <= 0:
        return 0.0, 0.0
    intra = inter = 0.0
    if per_node > 1:
        intra = fabric.latency_s + _ring(kind, per_node) * nbytes / fabric.intra_bw
    if nodes > 1:
        inter = fabric.latency_s + _ring(kind, nodes) * nbytes / fabric.inter_bw
    return intra, inter


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
