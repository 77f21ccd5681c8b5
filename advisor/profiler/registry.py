"""The one table of op formulas: aten op name -> (category, FLOP formula). Filled by the `formula` decorator.

A formula is a pure function of the op's arguments and result that looks only at shapes and flags:
`fn(call: Call) -> float` (real FLOPs, 2 per multiply-add). Bytes are not per-op formulas: the
counter measures them from the tensors read and written (see counter.py). Registering a name twice is an
error, so a formula lives in exactly one place.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class Call:
    """One op call as a formula sees it: positional and keyword arguments (bound by schema name) and the result."""

    __slots__ = ("func", "args", "kwargs", "out")

    def __init__(self, func: Any, args: tuple, kwargs: dict, out: Any):
        self.func, self.args, self.kwargs, self.out = func, args, kwargs, out

    def arg(self, name: str, default: Any = None) -> Any:
        if name in self.kwargs:
            return self.kwargs[name]
        names = _arg_names(self.func)
        if name in names:
            i = names.index(name)
            if i < len(self.args):
                return self.args[i]
        return default

    def given(self, name: str) -> Any:
        """The argument the op ran with: as passed, else the schema's default (the dispatcher leaves out trailing
        arguments equal to their defaults: bernoulli_(0.5) arrives as bernoulli_(x)); None where neither is."""
        value = self.arg(name)
        names = _arg_names(self.func)
        if value is None and name in names:
            value = self.func._schema.arguments[names.index(name)].default_value
        return value


_NAMES: dict[Any, list[str]] = {}


def _arg_names(func: Any) -> list[str]:
    names = _NAMES.get(func)
    if names is None:
        names = _NAMES[func] = [a.name for a in func._schema.arguments]
    return names


Formula = Callable[[Call], float]


@dataclass(frozen=True)
class Entry:
    name: str
    category: str  # "matrix" | "vector" | "memory"
    fn: Formula


REGISTRY: dict[str, Entry] = {}


def formula(*names: str, category: str) -> Callable[[Formula], Formula]:
    """Register `fn` as the FLOP formula of each aten op packet in `names` ("aten.mm", "aten.add_")."""
    if category not in ("matrix", "vector", "memory"):
        raise ValueError(f"unknown category {category!r}")

    def deco(fn: Formula) -> Formula:
        for name in names:
            if not name.startswith("aten."):
                raise ValueError(f"op names are written 'aten.NAME', got {name!r}")
            if name in REGISTRY:
                raise ValueError(f"{name} is registered twice ({REGISTRY[name].fn.__name__} and {fn.__name__})")
            REGISTRY[name] = Entry(name, category, fn)
        return fn

    return deco


def lookup(name: str) -> Entry | None:
    _load()
    return REGISTRY.get(name)


_LOADED = False


def _load() -> None:
    """Import the modules whose decorators fill the table (once)."""
    global _LOADED
    if not _LOADED:
        from advisor.profiler import formulas, formulas_nn, formulas_pointwise  # noqa: F401

        _LOADED = True


def registered() -> dict[str, Entry]:
    _load()
    return dict(REGISTRY)


# ---- helpers for formulas ----


def numel(x: Any) -> int:
    return math.prod(x.shape) if hasattr(x, "shape") else 1


def out_numel(out: Any) -> int:
    """Elements of the result (summed over a list of results, for _foreach ops)."""
    import torch

    if isinstance(out, torch.Tensor):
        return out.numel()
    if isinstance(out, (list, tuple)):
        return sum(out_numel(o) for o in out)
    return 0
