"""The ground floor of file handling: the one reader and the one writer of advisor.

Every module that reads a file or writes an output goes through here, so that the guarantees hold
everywhere at once.

Reading (`read_bytes`, `read_text`, `read_yaml`): regular files only (a fifo, a device or a folder is one
clear line, never a hang or an endless read), at most ADVISOR_MAX_FILE_SIZE bytes (64 MB unless that
variable says otherwise, e.g. `ADVISOR_MAX_FILE_SIZE=500MB`), and YAML through advisor.strict_yaml: safe,
duplicate keys refused, aliases and size within a budget of values that scales with the size limit. Every
failure is a UserError naming the file and line.

Writing (`write_atomic`): symlinks are followed and the real target is written; a regular target is
replaced atomically (a temporary file beside it, renamed over it) keeping its mode and owner; a
character device or a pipe (/dev/null, /dev/stdout, a fifo) is written directly, never replaced; a
read-only file, a block device, a socket or a folder is refused. The temporary file never outlives an
exception or a caught signal. `check_writable` runs the same checks before any work, and `same_file` lets
the CLI refuse an output that is one of a command's inputs.
"""

from __future__ import annotations

import datetime as dt
import errno
import gc
import os
import stat
import tempfile
from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from advisor import strict_yaml, units
from advisor.errors import UserError

MAX_SIZE_ENV = "ADVISOR_MAX_FILE_SIZE"
DEFAULT_MAX_BYTES = 64_000_000
# The YAML budget: one value per 12 bytes of the size limit (5.3 million for 64 MB; a catalog instance
# entry is about 20 values in 240 bytes), which keeps any file's values under about half a gigabyte.
BYTES_PER_VALUE = 12
# Open flags: never block on a fifo, never leak the descriptor, never adopt a terminal (POSIX; 0 elsewhere).
# read_bytes reads this much at a time; the profiler's page-fault replay starts from what that does to glibc malloc
# (profiler.heap.process_threshold)
READ_CHUNK = 1 << 22
_NOBLOCK = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
WRITTEN: list[str] = []  # outputs written by this process, for the message after an interrupt


def max_bytes() -> int:
    """The size limit for one input file: $ADVISOR_MAX_FILE_SIZE ('500MB', '2GiB', bytes) or 64 MB."""
    text = os.environ.get(MAX_SIZE_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        value = units.parse(text, "size", f"${MAX_SIZE_ENV}")
    except UserError as exc:
        raise UserError(exc.message, "write it like 200MB") from None
    if value < 1:
        raise UserError(f"${MAX_SIZE_ENV} must be positive, got {text!r}", "write it like 200MB")
    return int(value)


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a fifo (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: Path, what: str = "file") -> bytes:
    """The bytes of a regular file no larger than the limit; a UserError for anything else.

    Opened without blocking (a fifo with no writer cannot hang the open) and checked with fstat on the
    open descriptor, so a path swapped between a check and the read changes nothing."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NOBLOCK)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file", "check the path") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read {what} ({exc.strerror or exc})", "check the path") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"{path}: is {_kind(info.st_mode)}, not a regular file", f"give a {what} file")
        limit = max_bytes()
        if info.st_size > limit:
            raise _too_big(path, info.st_size, limit)
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(READ_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # the file grew while being read
                raise _too_big(path, total, limit)
        return b"".join(chunks)
    except OSError as exc:
        raise UserError(f"{path}: cannot read {what} ({exc.strerror or exc})", "check the file") from None
    finally:
        os.close(fd)


def starts_with(path: Path, prefix: bytes) -> bool:
    """Whether `path` is a regular file that begins with `prefix` (no hang on a fifo, no whole read)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOBLOCK)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(prefix)) == prefix
    except OSError:
        return False
    finally:
        os.close(fd)


def _too_big(path: Path, size: int, limit: int) -> UserError:
    return UserError(
        f"{path}: {units.fmt_bytes(size)} is over the {units.fmt_bytes(limit)} limit for an input file",
        f"for a legitimately huge file set {MAX_SIZE_ENV} (e.g. {MAX_SIZE_ENV}=500MB)",
    )


def read_text(path: Path, what: str = "file") -> str:
    """A regular file as UTF-8 text (a byte-order mark is dropped)."""
    return _decode(path, read_bytes(path, what), what)


def _decode(path: Path, data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UserError(
            f"{path}: cannot read {what}: not UTF-8 text (line {line}: {exc.reason})", "save it as UTF-8"
        ) from None


def read_yaml(path: Path, what: str = "YAML") -> Any:
    """One YAML file as plain values; every failure becomes a UserError naming the file (and line)."""
    path = Path(path)
    data = read_bytes(path, what)
    _decode(path, data, what)  # YAML files are UTF-8 (libyaml would take a UTF-16 byte-order mark)
    budget = max(10_000, max_bytes() // BYTES_PER_VALUE)
    enabled = gc.isenabled()
    gc.disable()  # the values built hold no cycles; collecting while millions are made only costs time
    try:
        return strict_yaml.load(data, budget)
    except strict_yaml.YamlProblem as exc:
        where = f":{exc.line}" if exc.line else ""
        raise UserError(f"{path}{where}: {exc.message}", exc.hint) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UserError(f"{path}{where}: malformed YAML: {problem}", "fix the YAML syntax") from None
    finally:
        if enabled:
            gc.enable()


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


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # libyaml's emitter: 10x faster
    """Never anchors and aliases: a value met twice is written twice, so advisor's own files read back
    under the alias budget of any size."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(data: Any) -> str:
    return yaml.dump(plain(data), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)


# ---- writing ----


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (symlinks, hard links and relative spellings resolved)."""
    try:
        sa, sb = os.stat(a), os.stat(b)
        return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _target(path: Path, what: str) -> tuple[Path, os.stat_result | None]:
    """Where a write to `path` lands and what is there now: (the path to write, its stat or None).

    A device or pipe is written through `path` itself (/dev/stdout's link may name 'pipe:[123]', which no
    one can open by name); anything else through the real path, so a symlink keeps pointing at its file."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise UserError(f"{what} path {path}: {exc.strerror or exc}", "choose another path") from None
    if info is not None and (stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode)):
        return path, info
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise UserError(
            f"{what} path {path} is {_kind(info.st_mode)}",
            "give a file name (or a character device or pipe such as /dev/stdout)",
        )
    real = Path(os.path.realpath(path))
    if info is not None and (not info.st_mode & 0o222 or not os.access(real, os.W_OK)):
        raise UserError(f"{what} path {path} is read-only", "make it writable, or choose another path")
    parent = real.parent
    if not parent.is_dir():
        raise UserError(f"{what} folder {parent} does not exist", "create it first or choose another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{what} folder {parent} is not writable", "choose a path you can write to")
    return real, info


def check_writable(path: Path, what: str = "output") -> Path:
    """Fail early (before any work) when `path` cannot be written; the path the write will land on."""
    return _target(path, what)[0]


def write_atomic(path: Path, text: str | bytes, what: str = "output") -> Path:
    """Write `text` to `path` as the module docstring says: never a half-written or replaced-by-accident file."""
    target, info = _target(path, what)
    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        if info is not None and not stat.S_ISREG(info.st_mode):
            _write_stream(target, data)
        else:
            _replace(target, data, info)
    except OSError as exc:
        raise UserError(f"cannot write {what} {path}: {exc.strerror or exc}", "check the path and free space") from None
    WRITTEN.append(str(path))
    return Path(path)


def write_csv(path: Path, rows: list[dict], what: str = "table", fields: list[str] | None = None) -> Path:
    """Write `rows` as CSV with a header of `fields` (default: the first row's keys, in order), via write_atomic;
    no rows and given fields: the header alone."""
    import csv
    import io

    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=fields or list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return write_atomic(path, text.getvalue(), what)


def _write_stream(path: Path, data: bytes) -> None:
    """A character device or a pipe: written in place. Opening without blocking makes a fifo that no one
    reads an error (ENXIO) instead of a hang."""
    try:
        fd = os.open(path, os.O_WRONLY | _NOBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise UserError(f"{path} is a pipe that no program reads", "start the reader first") from None
        raise
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _replace(target: Path, data: bytes, info: os.stat_result | None) -> None:
    """A temporary file beside `target`, with its mode (and owner, where allowed), renamed over it."""
    if info is not None:
        mode = stat.S_IMODE(info.st_mode)
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "wb") as handle:
            os.chmod(tmp, mode)
            if (
                info is not None
                and hasattr(os, "fchown")
                and (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid())
            ):
                try:
                    os.fchown(fd, info.st_uid, info.st_gid)
                except OSError:  # only root may give a file away; the mode is kept regardless
                    pass
            handle.write(data)
            handle.flush()
            os.fsync(fd)
        os.replace(tmp, target)
        tmp = None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
