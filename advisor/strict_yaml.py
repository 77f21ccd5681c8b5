"""YAML text to plain Python values, strictly and within a budget; advisor.io is its only caller.

PyYAML's safe loader builds a node tree of the whole document before it builds any value (about 40 times
the file's size in memory, a minute for 50 MB), lets a repeated key win silently and expands aliases
without limit, so that a one-kilobyte "alias bomb" becomes billions of values for whatever walks the result.
Here values are built straight from libyaml's events, with PyYAML's own scalar rules (so `2026-11-30` is a
date and `0x10` is 16, as before), and:

- a key repeated in one mapping is an error naming its line;
- every value counts against a budget of nodes, and an alias counts the whole value it repeats, so no
  input, however it is written, yields more than `budget` values; merge keys (`<<: *defaults`) work;
- only the standard scalar and collection tags are accepted (no `!!python/...`, `!!binary`, `!!set`);
- nesting is limited, so nothing downstream recurses without bound;
- a scalar its tag cannot read (`2026-13-45` as a date, a 5,000-digit integer) is an error naming its line
  and field, not a crash.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from typing import Any

import yaml
from yaml import events as ev
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode

_Parser = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's event parser when it is installed
_RESOLVERS = yaml.resolver.Resolver.yaml_implicit_resolvers
_T = "tag:yaml.org,2002:"
_CTOR = SafeConstructor()
_SCALARS = {
    _T + "int": ("an integer", _CTOR.construct_yaml_int),
    _T + "float": ("a number", _CTOR.construct_yaml_float),
    _T + "bool": ("true or false", _CTOR.construct_yaml_bool),
    _T + "null": ("null", _CTOR.construct_yaml_null),
    _T + "timestamp": ("a date", _CTOR.construct_yaml_timestamp),
}
_FAST = {  # plain decimal integers and floats and ISO dates: what PyYAML's constructors return for them
    _T + "int": (re.compile(r"[-+]?(?:0|[1-9][0-9]*)"), int),
    _T + "float": (re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"), float),
    _T + "timestamp": (
        re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"),
        lambda v: dt.date(int(v[:4]), int(v[5:7]), int(v[8:])),
    ),
}
MAX_DEPTH = 64
_MERGE = object()  # the plain scalar `<<` used as a key
_NO_KEY = object()


class YamlProblem(Exception):
    """What is wrong, and on which line (1-based; 0 when unknown)."""

    def __init__(self, line: int, message: str, hint: str | None = None):
        super().__init__(message)
        self.line, self.message, self.hint = line, message, hint


def _line(event) -> int:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else 0


def _short(tag: str) -> str:
    return "!!" + tag.removeprefix(_T) if tag.startswith(_T) else tag


def _resolve(value: str) -> str:
    """The tag PyYAML's safe loader gives a plain (unquoted) scalar."""
    for tag, regexp in _RESOLVERS.get(value[0] if value else "", ()):
        if regexp.match(value):
            return tag
    return _T + "str"


class _Frame:
    __slots__ = ("value", "is_map", "key", "key_event", "merges", "anchor", "start", "event")

    def __init__(self, value, is_map: bool, anchor: str | None, start: int, event):
        self.value, self.is_map, self.anchor, self.start, self.event = value, is_map, anchor, start, event
        self.key, self.key_event, self.merges = _NO_KEY, None, None


class _Builder:
    def __init__(self, budget: int):
        self.budget = budget
        self.count = 0
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.open_anchors: set[str] = set()
        self.root: Any = None
        self.documents = 0

    def field(self) -> str:
        """The dotted path of the value being built: 'instances[3].pricing.regions'."""
        out = ""
        for frame in self.stack:
            if frame.is_map:
                if frame.key is not _NO_KEY:
                    out += f".{frame.key}" if out else str(frame.key)
            else:
                out += f"[{len(frame.value)}]"
        return out

    def spend(self, n: int, e) -> None:
        self.count += n
        if self.count > self.budget:
            raise YamlProblem(
                _line(e),
                f"more than {self.budget:,} values (aliases count what they repeat)",
                "this is not a file advisor wrote; for a legitimately huge file raise ADVISOR_MAX_FILE_SIZE",
            )

    def scalar(self, e) -> Any:
        tag, value = e.tag, e.value
        if tag is None or tag == "!":
            if not e.implicit[0]:
                return value  # quoted: text
            tag = _resolve(value)
        if tag == _T + "str":
            return value
        if tag == _T + "merge":
            return _MERGE
        known = _SCALARS.get(tag)
        if known is None:
            raise YamlProblem(
                _line(e), f"tag {_short(tag)} is not allowed", "only plain YAML is read (no !!python or other tags)"
            )
        what, construct = known
        try:
            fast = _FAST.get(tag)  # the common spellings, without building a node
            if fast is not None and fast[0].fullmatch(value):
                return fast[1](value)
            return construct(ScalarNode(tag, value))
        except (ValueError, OverflowError, TypeError, AttributeError, KeyError, yaml.YAMLError) as exc:
            field = self.field()
            at = f"field {field}: " if field else ""
            text = value if len(value) <= 40 else value[:37] + "..."
            why = str(exc).split("\n")[0][:80]
            raise YamlProblem(_line(e), f"{at}cannot read {text!r} as {what} ({why})") from None

    def add(self, value: Any, e) -> None:
        """Put `value` (built from event `e`) where it belongs: the root, a list, a key, a key's value."""
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        if not top.is_map:
            if value is _MERGE:
                raise YamlProblem(_line(e), "'<<' (a merge key) is not a value", "quote it for the text '<<'")
            top.value.append(value)
            return
        if top.key is _NO_KEY:
            try:
                hash(value)
            except TypeError:
                raise YamlProblem(_line(e), "a mapping key must be a plain value, not a list or mapping") from None
            top.key, top.key_event = sys.intern(value) if value.__class__ is str else value, e
            return
        key, top.key = top.key, _NO_KEY
        if value is _MERGE:
            raise YamlProblem(_line(e), "'<<' (a merge key) is not a value", "quote it for the text '<<'")
        if key is _MERGE:
            merges = value if isinstance(value, list) else [value]
            if not all(isinstance(m, dict) for m in merges):
                raise YamlProblem(_line(e), "'<<' must merge a mapping or a list of mappings (e.g. <<: *defaults)")
            top.merges = (top.merges or []) + merges
            return
        if key in top.value:
            raise YamlProblem(
                _line(top.key_event),
                f"duplicate key {key!r}" + (f" in {self.field()}" if self.field() else ""),
                "each key may appear once in a mapping; remove one",
            )
        top.value[key] = value

    def open(self, e, is_map: bool) -> None:
        if e.tag not in (None, "!", _T + ("map" if is_map else "seq")):
            raise YamlProblem(
                _line(e), f"tag {_short(e.tag)} is not allowed", "only plain YAML is read (no !!python or other tags)"
            )
        if len(self.stack) >= MAX_DEPTH:
            raise YamlProblem(_line(e), f"nested deeper than {MAX_DEPTH} levels", "no advisor file is nested this deep")
        self.spend(1, e)
        if e.anchor is not None:
            self.open_anchors.add(e.anchor)
        self.stack.append(_Frame({} if is_map else [], is_map, e.anchor, self.count, e))

    def close(self, e) -> None:
        frame = self.stack.pop()
        value = frame.value
        if frame.is_map and frame.merges:
            merged: dict = {}
            for m in reversed(frame.merges):  # the first mapping listed wins, and the node's own keys win
                merged.update(m)
            merged.update(value)
            value = merged
        if frame.anchor is not None:
            self.open_anchors.discard(frame.anchor)
            self.anchors[frame.anchor] = (value, self.count - frame.start + 1)
        self.add(value, frame.event)

    def alias(self, e) -> None:
        if e.anchor in self.open_anchors:
            raise YamlProblem(_line(e), f"alias *{e.anchor} refers to a value that contains it (a recursive alias)")
        if e.anchor not in self.anchors:
            raise YamlProblem(_line(e), f"alias *{e.anchor} has no anchor &{e.anchor} before it")
        value, size = self.anchors[e.anchor]
        self.spend(size, e)
        self.add(value, e)

    def event(self, e) -> None:
        cls = e.__class__
        if cls is ev.ScalarEvent:
            self.spend(1, e)
            value = self.scalar(e)
            if e.anchor is not None:
                self.anchors[e.anchor] = (value, 1)
            self.add(value, e)
        elif cls is ev.MappingStartEvent:
            self.open(e, True)
        elif cls is ev.SequenceStartEvent:
            self.open(e, False)
        elif cls is ev.MappingEndEvent or cls is ev.SequenceEndEvent:
            self.close(e)
        elif cls is ev.AliasEvent:
            self.alias(e)
        elif cls is ev.DocumentStartEvent:
            self.documents += 1
            if self.documents > 1:
                raise YamlProblem(_line(e), "more than one YAML document ('---') in the file", "keep one document")


def load(data: bytes | str, budget: int) -> Any:
    """The single document in `data` as plain values (None when empty). Raises YamlProblem for what the
    checks above refuse, and yaml.YAMLError (with a problem_mark) for malformed YAML."""
    builder = _Builder(budget)
    parser = _Parser(data)
    get, add, stack, resolvers = parser.get_event, builder.add, builder.stack, _RESOLVERS
    scalar, map_start, seq_start, map_end, seq_end = (
        ev.ScalarEvent, ev.MappingStartEvent, ev.SequenceStartEvent, ev.MappingEndEvent, ev.SequenceEndEvent,
    )  # fmt: skip
    intern, frame = sys.intern, _Frame
    try:
        # The fast paths cover most of any file; everything else (tags, anchors, aliases, merge keys,
        # repeated keys, numbers, dates, the budget running out) takes builder.event, which checks it.
        while (e := get()) is not None:
            cls = e.__class__
            if cls is scalar:
                # An untagged scalar that no implicit rule turns into a number, date or null (PyYAML's rules
                # start from its first character) is text: a key, or a key's new value, or a list item.
                if e.tag is None and e.anchor is None and builder.count < budget and stack:
                    value = e.value
                    if not e.implicit[0] or not resolvers.get(value[:1]):
                        top = stack[-1]
                        if not top.is_map:
                            top.value.append(value)
                        elif top.key is _NO_KEY:
                            top.key, top.key_event = intern(value), e
                        elif top.key is not _MERGE and top.key not in top.value:
                            top.value[top.key] = value
                            top.key = _NO_KEY
                        else:
                            add(value, e)  # a merge or a repeated key: the slow path says what is wrong
                        builder.count += 1
                        continue
            elif cls is map_start or cls is seq_start:
                if e.tag is None and e.anchor is None and builder.count < budget and len(stack) < MAX_DEPTH:
                    builder.count += 1
                    is_map = cls is map_start
                    stack.append(frame({} if is_map else [], is_map, None, builder.count, e))
                    continue
            elif cls is map_end or cls is seq_end:
                top = stack[-1]
                if top.anchor is None and not top.merges and len(stack) > 1:
                    stack.pop()
                    add(top.value, top.event)
                    continue
            builder.event(e)
    finally:
        parser.dispose()
    return builder.root
