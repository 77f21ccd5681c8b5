"""Loading a user's model file and calling into it, with errors a user can act on.

The file is executed as Python (it is the user's own code). It must define `build_model()` returning a
torch.nn.Module and `example_batch(batch_size)` returning a Tensor, a tuple (positional arguments) or a dict
(keyword arguments); it may define `training_step(model, batch) -> loss` and `make_optimizer(parameters)`.
Any exception raised inside the file is reported as one line naming the file, the line and the error,
taken from the user's own frames of the traceback rather than ours.
"""

from __future__ import annotations

import hashlib
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import UserError
from advisor.profiler import recipe

CONTRACT = "a model file defines build_model() -> torch.nn.Module and example_batch(batch_size)"
OOM_HINT = "try a smaller --batch-size, or --device meta to count without allocating anything"


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


def load_model_file(path: str | Path) -> ModelFile:
    path = Path(path)
    if not path.exists():
        raise UserError(f"model file {path} does not exist", "check the path")
    if path.is_dir():
        raise UserError(f"{path} is a folder, expected a model .py file")
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read model file {path}: {exc.strerror or exc}") from None
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as exc:
        raise UserError(
            f"{path}:{exc.lineno}: syntax error: {exc.msg}", "the model file is executed as Python; fix it"
        ) from None
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
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        if is_oom(exc):
            at = f" at batch size {batch_size}" if batch_size else ""
            raise UserError(f"out of memory on {device or 'the device'}{at} ({what})", OOM_HINT) from None
        if _ours(exc):
            raise InternalError(f"{type(exc).__name__}: {exc}") from exc
        raise UserError(f"{what} failed: {describe(exc, path)}") from None
