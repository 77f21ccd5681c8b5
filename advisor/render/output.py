"""One way to print a result: a rich table for people, the same data as JSON or YAML for machines.

Whatever the format, a result holding a non-finite number (NaN, infinity) is never printed: validated
inputs cannot produce one, so it is a bug in advisor, reported as an internal error (exit code 1), and JSON
output is always strict JSON."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from enum import Enum
from typing import Any

from advisor.io import dump_yaml, plain


class Format(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"


class NonFiniteResult(RuntimeError):
    """A result to print holds NaN or infinity: a bug, never shown as a number."""


def check_finite(data: Any, where: str = "") -> None:
    """Raise NonFiniteResult naming the first field of plain `data` that is NaN or infinite."""
    stack = [(data, where)]
    while stack:
        value, at = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise NonFiniteResult(f"the result's field {at or '(top)'} is {value} (no estimate may be non-finite)")
        if isinstance(value, dict):
            stack += [(v, f"{at}.{k}" if at else str(k)) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(v, f"{at}[{i}]") for i, v in enumerate(value)]


def emit(data: Any, fmt: Format, table: Callable[[], None]) -> None:
    """Print `data` as JSON/YAML, or call `table` to draw it for people."""
    body = plain(data)
    check_finite(body)
    if fmt == Format.json:
        sys.stdout.write(json.dumps(body, indent=2, allow_nan=False) + "\n")
    elif fmt == Format.yaml:
        sys.stdout.write(dump_yaml(body))
    else:
        table()
