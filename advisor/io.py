"""The ground floor of file handling: the one reader (safe YAML) and the one writer (atomic) of advisor.

Every module that reads a YAML file or writes an output goes through here, so that the guarantees hold
everywhere at once: YAML is loaded with a safe loader only, and a failure becomes a UserError naming the
file (and line); an output is written to a temporary file beside its target and renamed over it, so a
target is never half-written. Nothing here imports anything of advisor but the error type.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from advisor.errors import UserError

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: Path) -> Any:
    """Safe-load one YAML file; every failure becomes a UserError naming the file (and line)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file", "check the path") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder, expected a YAML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})", "check the file") from None
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        where = f":{mark.line + 1}" if mark else ""
        raise UserError(
            f"{path}{where}: {exc.problem}",
            "only plain YAML is allowed (no !!python or other tags)",
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UserError(f"{path}{where}: malformed YAML: {problem}", "fix the YAML syntax") from None


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
