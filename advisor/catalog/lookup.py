"""Forgiving lookup of devices and instances by name: 'h100', 'H100 SXM', 'a100-80gb', 'p5.48xlarge'.

Order: an exact id, name or alias (ignoring case, spaces, '-', '_' and '.'); then entries whose words
contain every word of the query. One match wins; several are an ambiguity listing the candidates; none
is an unknown name with the closest spellings.
"""

from __future__ import annotations

import difflib
import re
from typing import Literal

from advisor.catalog.schema import Catalog, Device, Instance
from advisor.errors import UserError

Entry = Device | Instance


def _squash(text: str) -> str:
    return re.sub(r"[\s_.\-/+]+", "", text.lower())


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[\s_.\-/()+,]+", text.lower()) if w}


def _names(entry: Entry) -> list[str]:
    names = [entry.id, entry.name, *entry.aliases]
    if isinstance(entry, Instance):
        names.append(f"{entry.provider} {entry.name}")
    return names


def _entries(catalog: Catalog, what: Literal["device", "instance", "any"]) -> list[Entry]:
    out: list[Entry] = []
    if what in ("device", "any"):
        out.extend(catalog.devices.values())
    if what in ("instance", "any"):
        out.extend(catalog.instances.values())
    return out


def find(catalog: Catalog, query: str, what: Literal["device", "instance", "any"] = "any") -> Entry:
    """The one entry `query` names, or a UserError that lists candidates."""
    label = {"device": "device", "instance": "instance", "any": "device or instance"}[what]
    entries = _entries(catalog, what)
    key = _squash(query)
    if not key:
        raise UserError(f"empty {label} name", "give a name such as 'h100' or 'p5.48xlarge'")
    exact = [e for e in entries if e.id == query.lower()]
    if not exact:
        exact = [e for e in entries if any(_squash(n) == key for n in _names(e))]
    if len(exact) == 1:
        return exact[0]
    if len(exact) > 1:
        raise _ambiguous(query, label, exact)
    words = _words(query)
    partial = [e for e in entries if words <= set().union(*(_words(n) for n in _names(e)))]
    if not partial:  # 'h100sxm' or 'a10080gb': squashed substring of a name
        partial = [e for e in entries if any(key in _squash(n) for n in _names(e))]
    if len(partial) == 1:
        return partial[0]
    if len(partial) > 1:
        # prefer devices over the instances that carry them when both matched
        devices = [e for e in partial if isinstance(e, Device)]
        if what == "any" and len(devices) == 1:
            return devices[0]
        raise _ambiguous(query, label, partial)
    spellings = {_squash(n): e.id for e in entries for n in _names(e)}
    close = difflib.get_close_matches(key, list(spellings), n=5, cutoff=0.6)
    suggestions = list(dict.fromkeys(spellings[c] for c in close))
    raise UserError(
        f"unknown {label} {query!r}",
        "run 'advisor catalog list' to see every name",
        suggestions,
    )


def _ambiguous(query: str, label: str, matches: list[Entry]) -> UserError:
    ids = sorted(e.id for e in matches)
    shown = ", ".join(ids[:12]) + (f", … ({len(ids)} in all)" if len(ids) > 12 else "")
    return UserError(f"{label} name {query!r} is ambiguous: it matches {shown}", "give one of these ids")


def find_device(catalog: Catalog, query: str) -> Device:
    entry = find(catalog, query, "device")
    assert isinstance(entry, Device)
    return entry


def find_instance(catalog: Catalog, query: str) -> Instance:
    entry = find(catalog, query, "instance")
    assert isinstance(entry, Instance)
    return entry
