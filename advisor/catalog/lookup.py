"""Forgiving lookup of devices and instances by name: 'h100', 'H100 SXM', 'a100-80gb', 'p5.48xlarge'.

Order: an exact id or full name (ignoring case, spaces, '-', '_' and '.'); then an exact alias, unless the
alias is a family word: when the words of the query name several devices ('a100' is four cards, 'h100'
three, 'v100' three), it is ambiguous and the variants are listed instead of one being chosen; then entries
whose words contain every word of the query. One match wins; several are an ambiguity listing the
candidates. A query that is only part of a word ('l40' in 'l40s', a different card) is never taken for it:
it is unknown, with the closest spellings.
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
        exact = [e for e in entries if _squash(e.id) == key or _squash(e.name) == key]
    if len(exact) == 1:
        return exact[0]
    words = _words(query)
    partial = [e for e in entries if words <= set().union(*(_words(n) for n in _names(e)))]
    family = [e for e in partial if isinstance(e, Device)]
    if not exact:
        exact = [e for e in entries if any(_squash(n) == key for n in _names(e))]
        if len(exact) == 1 and isinstance(exact[0], Device) and len(family) > 1:
            raise _ambiguous(query, label, family)  # an alias that is a family word
        if len(exact) == 1:
            return exact[0]
    if len(exact) > 1:
        raise _ambiguous(query, label, exact)
    if len(partial) == 1:
        return partial[0]
    if len(partial) > 1:
        # prefer devices over the instances that carry them when both matched
        if what == "any" and len(family) == 1:
            return family[0]
        raise _ambiguous(query, label, family if what == "any" and family else partial)
    spellings = {_squash(n): e.id for e in entries for n in _names(e)}
    close = difflib.get_close_matches(key, list(spellings), n=5, cutoff=0.6)
    close += [spellings[s] for s in spellings if key in s]  # 'l40' is part of 'l40s': a suggestion, not a match
    suggestions = list(dict.fromkeys(spellings.get(c, c) for c in close))
    raise UserError(
        f"unknown {label} {query!r}",
        "run 'advisor catalog list' to see every name",
        suggestions[:6],
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
