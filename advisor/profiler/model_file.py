"""Loading a user's model file and calling into it, with errors a user can act on.

The file is executed as Python (it is the user's own code). It must define `build_model()` returning a
torch.nn.Module and `example_batch(batch_size)` returning a Tensor, a tuple (positional arguments) or a dict
(keyword arguments); it may define `training_step(model, batch) -> loss` and `make_optimizer(parameters)`.
Any exception raised inside the file is reported as one line naming the file, the line and the error,
taken from the user's own frames of the traceback rather than ours; so is `sys.exit()` called in it.
While it runs (`user_code`), what it prints goes to stderr, so that `--format json` output stays parseable,
and a time limit stops a model that never returns.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import sys
import threading
import time
import traceback
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import UserError
from advisor.profiler import recipe

CONTRACT = "a model file defines build_model() -> torch.nn.Module and example_batch(batch_size)"
OOM_HINT = "try a smaller --batch-size, or --device meta to count without allocating anything"
META_HINT = (
    "--device meta puts the model and batch on meta, while a tensor your code makes without device= stays on the CPU: "
    "make it on its input's device (torch.eye(n, device=x.device)), or profile with --device cpu"
)


@dataclass
class ModelFile:
    path: Path
    sha256: str
    build_model: Callable[[], Any]
    example_batch: Callable[[int], Any]
    training_step: Callable[[Any, Any], Any] | None
    make_optimizer: Callable[[Any], Any] | None
    global_batch: int | None = None  # GLOBAL_BATCH (advisor/profiler/recipe.py)
    global_batch_source: str | None = None


class InternalError(Exception):
    """An exception raised by advisor's own code while the user's code was running (a bug in advisor)."""


class TimedOut(BaseException):
    """The user's code ran past --timeout (a BaseException, so that `except Exception` in it cannot keep it)."""


GRACE_S = 5.0  # after the first alarm, how long code that swallowed it may go on before the process ends


@contextlib.contextmanager
def user_code(what: str, timeout_s: float | None = None, started: float | None = None) -> Iterator[None]:
    """Run the user's code (`what` names it: 'model.py') with its prints sent to stderr and, with a
    positive `timeout_s` on the main thread of a POSIX system, stopped after that many seconds (counted
    from `started`, a time.monotonic() reading, when one limit spans several calls).

    The limit is an interval timer (SIGALRM): it interrupts Python code and sleeps at once, a running
    native kernel when it returns. Code that catches even BaseException gets GRACE_S more seconds, then the
    process ends with the same one line and exit code 2."""
    message = f"{what} still running after --timeout {timeout_s:g} s; stopped" if timeout_s else ""
    hint = "raise --timeout (0: no limit), or look for a loop in the model that never ends"
    timed = bool(timeout_s and timeout_s > 0) and hasattr(signal, "setitimer")
    timed = timed and threading.current_thread() is threading.main_thread()

    def hard_stop(signum, frame) -> None:
        os.write(2, f"error: {message}; {hint}\n".encode())
        os._exit(2)

    def alarm(signum, frame) -> None:
        signal.signal(signal.SIGALRM, hard_stop)
        signal.setitimer(signal.ITIMER_REAL, GRACE_S)
        raise TimedOut

    previous = signal.signal(signal.SIGALRM, alarm) if timed else None
    if timed:
        left = timeout_s - (time.monotonic() - started) if started is not None else timeout_s
        signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3))
    try:
        with _stdout_to_stderr():
            yield
    except TimedOut:
        raise UserError(message, hint) from None
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """print() and native writes to file descriptor 1 land on stderr; restored afterwards."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1 at all: Python-level redirection only
        saved = None
    if saved is not None:
        os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def load_model_file(path: str | Path) -> ModelFile:
    from advisor.io import read_bytes

    path = Path(path)
    if not path.exists():
        raise UserError(f"model file {path} does not exist", "check the path")
    if path.is_dir():
        raise UserError(f"{path} is a folder, expected a model .py file")
    source = read_bytes(path, "model .py")
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as exc:
        raise UserError(
            f"{path}:{exc.lineno}: syntax error: {exc.msg}", "the model file is executed as Python; fix it"
        ) from None
    except ValueError as exc:  # NUL bytes: not Python source at all
        raise UserError(f"{path}: not Python source ({exc})", "give the path of a .py model file") from None
    module = types.ModuleType(path.stem)
    module.__file__ = str(path)
    call_user(lambda: exec(code, module.__dict__), path, f"running {path.name}")
    missing = [n for n in ("build_model", "example_batch") if not callable(getattr(module, n, None))]
    if missing:
        names = " and ".join(f"{n}()" for n in missing)
        raise UserError(f"{path} does not define {names}", CONTRACT)
    optional = {}
    for name in ("training_step", "make_optimizer"):
        fn = getattr(module, name, None)
        if fn is not None and not callable(fn):
            raise UserError(f"{path}: {name} is not a function", f"define it as def {name}(...)")
        optional[name] = fn
    batch, batch_source = recipe.global_batch(module, path)
    return ModelFile(
        path,
        hashlib.sha256(source).hexdigest(),
        module.build_model,
        module.example_batch,
        **optional,
        global_batch=batch,
        global_batch_source=batch_source,
    )


def is_oom(exc: BaseException) -> bool:
    try:
        import torch

        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
    except ImportError:  # pragma: no cover
        pass
    text = str(exc)
    return isinstance(exc, (RuntimeError, MemoryError)) and (
        "out of memory" in text or "can't allocate memory" in text or isinstance(exc, MemoryError)
    )


def user_frames(exc: BaseException, path: Path) -> list[traceback.FrameSummary]:
    target = str(Path(path).resolve())
    frames = traceback.extract_tb(exc.__traceback__)
    return [f for f in frames if f.filename and str(Path(f.filename).resolve()) == target]


def describe(exc: BaseException, path: Path) -> str:
    """'model.py, line 12, in forward: ValueError: boom' (the innermost frame in the user's file)."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    frames = user_frames(exc, path)
    if frames:
        f = frames[-1]
        return f"{Path(path).name}, line {f.lineno}, in {f.name}: {text}"
    return text


def _ours(exc: BaseException) -> bool:
    frames = traceback.extract_tb(exc.__traceback__)
    here = str(Path(__file__).resolve().parent)
    return bool(frames) and str(Path(frames[-1].filename).resolve()).startswith(here)


def call_user(fn: Callable[[], Any], path: Path, what: str, batch_size: int | None = None, device: str = "") -> Any:
    """Call into the user's code; its exceptions become one-line UserErrors."""
    try:
        return fn()
    except UserError:
        raise
    except (KeyboardInterrupt, TimedOut):
        raise
    except SystemExit as exc:
        frames = user_frames(exc, path)
        where = f"{Path(path).name}, line {frames[-1].lineno}" if frames else Path(path).name
        raise UserError(
            f"{what} failed: {where} called sys.exit({'' if exc.code is None else repr(exc.code)})",
            "a model file must not exit: remove the call (advisor runs the file inside its own process)",
        ) from None
    except BaseException as exc:
        if is_oom(exc):
            at = f" at batch size {batch_size}" if batch_size else ""
            raise UserError(f"out of memory on {device or 'the device'}{at} ({what})", OOM_HINT) from None
        if _ours(exc):
            raise InternalError(f"{type(exc).__name__}: {exc}") from exc
        hint = META_HINT if device == "meta" and meta_mismatch(exc) else None
        raise UserError(f"{what} failed: {describe(exc, path)}", hint) from None


def meta_mismatch(exc: BaseException) -> bool:
    """Whether `exc` is torch's complaint that a meta tensor met a tensor on a real device (a user's tensor made
    without `device=`, in a run on the meta device)."""
    text = str(exc)
    return isinstance(exc, RuntimeError) and "meta" in text and "device" in text
