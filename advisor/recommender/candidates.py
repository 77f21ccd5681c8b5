"""Candidate configurations: every catalog instance × precision × node count × parallel layout.

Node counts are 1, 2, 4, … up to the instance's `max_nodes` and the --max-devices cap. Owned machines
(on-prem, at amortized prices) take part only when --providers names their provider; devices marked
`training: false` in the catalog (inference chips) never do. Both are counted as rejections. A node always uses
all of its instance's devices (a CPU instance counts as one device, as `advisor estimate` does): one pays
for the whole instance anyway. The layouts of each (instance, precision) are enumerated and evaluated
together by the layout search (advisor/estimator/search.py). Spot and on-demand share one estimate and
differ only in price, so pricing is applied after estimating (see rank.py).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass

from advisor.catalog.schema import Catalog, Device, Instance
from advisor.errors import UserError
from advisor.vocab import BLOCK_MATMUL_DTYPE, COMPUTE_DTYPE, DEVICE_KINDS, PRECISIONS

# Without --precision: fp32, tf32 where the device has it, and one 16-bit mixed precision (bf16-mixed, or
# fp16-mixed on devices without bf16; both run at the same rate, so listing both would only duplicate).
# Pure bf16 changes the numerics of training (no fp32 master weights): only considered when asked for.
DEFAULT_PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "bf16-mixed", "fp16-mixed")


def default_precisions(device: Device) -> list[str]:
    have = device.dtypes()
    out = ["fp32"] + (["tf32"] if "tf32" in have else [])
    if "bf16" in have:
        out.append("bf16-mixed")
    elif "fp16" in have:
        out.append("fp16-mixed")
    return out


KINDS = DEVICE_KINDS
OWNED = "owned hardware (not rented; ask with --providers)"


@dataclass(frozen=True)
class Candidate:
    """One instance and precision, with the node counts its layouts are searched on."""

    instance: Instance
    device: Device
    per_node: int
    precision: str
    counts: tuple[int, ...]

    def label(self, nodes: int | None = None, layout: str = "") -> str:
        where = f"{nodes}×{self.per_node}" if nodes else f"{self.per_node} per node"
        return f"{self.instance.id} ({where}, {self.precision}{', ' + layout if layout else ''})"


def is_owned(catalog: Catalog, instance: Instance) -> bool:
    """Owned machines at an amortized price: the provider says so (catalog `providers`), or, for a provider
    without an entry, the instance's `amortized` flag."""
    provider = catalog.providers.get(instance.provider)
    return provider.owned if provider is not None else instance.amortized


def devices_per_node(instance: Instance, device: Device) -> int:
    return 1 if device.kind == "cpu" else int(round(instance.device_count))


def node_counts(instance: Instance, per_node: int, max_devices: int) -> list[int]:
    counts, n = [], 1
    while n <= instance.max_nodes and n * per_node <= max_devices:
        counts.append(n)
        n *= 2
    return counts


def _squash(text: str) -> str:
    return re.sub(r"[\s_.\-/+]+", "", text.lower())


def resolve_providers(catalog: Catalog, wanted: list[str]) -> list[str]:
    """Provider names checked against the catalog, with did-you-mean for a typo."""
    known = sorted({i.provider for i in catalog.instances.values()})
    out = []
    for name in wanted:
        key = name.strip().lower()
        if key not in known:
            raise UserError(
                f"unknown provider {name!r}",
                f"providers in the catalog: {', '.join(known)}",
                difflib.get_close_matches(key, known, n=3, cutoff=0.5),
            )
        out.append(key)
    return out


def resolve_devices(catalog: Catalog, wanted: list[str]) -> list[str]:
    """Device ids matching each term: a kind ('gpu'), an id, name or alias, or a part of one ('h100' matches
    every H100 variant). A term matching nothing is an error with the closest spellings."""
    out: set[str] = set()
    for term in wanted:
        key = _squash(term)
        if key in KINDS:
            out |= {d.id for d in catalog.devices.values() if d.kind == key}
            continue
        hits = {d.id for d in catalog.devices.values() if any(key in _squash(n) for n in (d.id, d.name, *d.aliases))}
        if not hits:
            spellings = {_squash(n): d.id for d in catalog.devices.values() for n in (d.id, *d.aliases)}
            close = difflib.get_close_matches(key, list(spellings), n=5, cutoff=0.6)
            raise UserError(
                f"unknown device {term!r}",
                "give a device id, alias or kind (cpu, gpu, tpu, accelerator); 'advisor catalog list' shows them",
                list(dict.fromkeys(spellings[c] for c in close)),
            )
        out |= hits
    return sorted(out)


def resolve_precisions(wanted: list[str]) -> list[str]:
    for p in wanted:
        if p not in PRECISIONS:
            raise UserError(
                f"unknown precision {p!r}",
                f"use one of {', '.join(PRECISIONS)}",
                difflib.get_close_matches(p, PRECISIONS, n=2),
            )
    return list(dict.fromkeys(wanted))


def precision_supported(device: Device, precision: str) -> bool:
    """Whether the device computes in the precision's dtype (and fp8-mixed's FP8 matmuls). tf32 on a device
    without it would run as fp32, a duplicate of the fp32 candidate, so it is not supported here."""
    block = BLOCK_MATMUL_DTYPE.get(precision)
    if block and not device.matrix_flops.get(block):
        return False
    return COMPUTE_DTYPE[precision] in device.dtypes()


def enumerate_candidates(
    catalog: Catalog,
    precisions: list[str] | None,
    max_devices: int,
    rejected,
    providers: list[str] | None = None,
    devices: list[str] | None = None,
) -> Iterator[Candidate]:
    """Every (instance, precision) that passes the filters; `rejected(reason, label, configurations)` is told
    about the others (an instance filtered out counts as one configuration per node count and precision)."""
    for instance in catalog.instances.values():
        device = catalog.devices[instance.device]
        wanted = precisions or default_precisions(device)
        per_node = devices_per_node(instance, device)
        counts = node_counts(instance, per_node, max_devices)
        per_precision = max(len(counts), 1)
        if providers and instance.provider not in providers:
            rejected("provider filter", instance.id, per_precision * len(wanted))
            continue
        if devices and device.id not in devices:
            rejected("device filter", instance.id, per_precision * len(wanted))
            continue
        if not device.training:
            rejected("inference-only device", f"{instance.id} ({device.id})", per_precision * len(wanted))
            continue
        if is_owned(catalog, instance) and instance.provider not in (providers or []):
            rejected(OWNED, instance.id, per_precision * len(wanted))
            continue
        if not counts:
            rejected("more devices than --max-devices", f"{instance.id} ({per_node} devices per node)", 1)
            continue
        for precision in wanted:
            if not precision_supported(device, precision):
                missing = f"{instance.id} ({device.id} has no {COMPUTE_DTYPE[precision]})"
                rejected("precision unsupported", missing, per_precision)
                continue
            yield Candidate(instance, device, per_node, precision, tuple(counts))
