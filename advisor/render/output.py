"""One way to print a result: a rich table for people, the same data as JSON or YAML for machines."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from enum import Enum
from typing import Any

from advisor.io import dump_yaml, plain


class Format(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"


def emit(data: Any, fmt: Format, table: Callable[[], None]) -> None:
    """Print `data` as JSON/YAML, or call `table` to draw it for people."""
    if fmt == Format.json:
        sys.stdout.write(json.dumps(plain(data), indent=2) + "\n")
    elif fmt == Format.yaml:
        sys.stdout.write(dump_yaml(data))
    else:
        table()
