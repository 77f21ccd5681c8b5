"""One way to print a result: a rich table for people, the same data as JSON or YAML for machines."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import tempfile
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from advisor.errors import UserError


class Format(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"


def plain(data: Any) -> Any:
    """Turn pydantic models, enums and dates into plain JSON-able values."""
    if isinstance(data, BaseModel):
        return plain(data.model_dump(mode="json", exclude_none=True))
    if isinstance(data, dict):
        return {str(k): plain(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [plain(v) for v in data]
    if isinstance(data, Enum):
        return data.value
    if isinstance(data, (dt.date, dt.datetime)):
        return data.isoformat()
    if isinstance(data, Path):
        return str(data)
    return data


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(plain(data), sort_keys=False, allow_unicode=True, width=110)


def emit(data: Any, fmt: Format, table: Callable[[], None]) -> None:
    """Print `data` as JSON/YAML, or call `table` to draw it for people."""
    if fmt == Format.json:
        sys.stdout.write(json.dumps(plain(data), indent=2) + "\n")
    elif fmt == Format.yaml:
        sys.stdout.write(dump_yaml(data))
    else:
        table()


def check_writable(path: Path, what: str = "output") -> Path:
    """Fail early (before any work) when `path` cannot be written."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise UserError(f"{what} path {path} is a folder", "give a file name")
    if not parent.is_dir():
        raise UserError(f"{what} folder {parent} does not exist", "create it first or choose another path")
    if not os.access(parent, os.W_OK):
        raise UserError(f"{what} folder {parent} is not writable", "choose a path you can write to")
    return path


def write_atomic(path: Path, text: str | bytes, what: str = "output") -> Path:
    """Write to a temporary file beside `path`, then rename: never a half-written file."""
    path = check_writable(path, what)
    mode = "wb" if isinstance(text, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a written file gets the usual permissions
        with os.fdopen(fd, mode) as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
