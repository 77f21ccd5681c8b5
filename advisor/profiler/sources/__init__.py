"""Model sources: what `advisor profile MODEL` accepts besides a model file, each resolved to what the model-file
loader returns (build_model, example_batch, an optional training_step) plus where it came from.

    mymodel.py                    a model file (advisor/profiler/model_file.py)
    resnet50, llama3_8b           a shipped reference model file (profiles/models/NAME.py)
    hf:gpt2, hf:PATH/config.json  a Hugging Face model built from its configuration, never its weights
    timm:NAME, torchvision:NAME   a timm or torchvision model by name, without pretrained weights

Each library is an optional extra of advisor, imported only here and only when its prefix is used; a missing one
is one line naming the extra to install. Nothing in this package imports torch at module level.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from advisor.errors import UserError
from advisor.profiler.model_file import ModelFile, load_model_file
from advisor.profiler.schema import ModelSource

PREFIXES = ("hf", "timm", "torchvision")
SPEC_HELP = (
    "a model file (Python, executed) defining build_model() and example_batch(batch_size); a shipped model "
    "(resnet50, llama3_8b, ...); hf:ID or hf:PATH/config.json (Hugging Face, from the config only); "
    "timm:NAME; torchvision:NAME"
)


@dataclass
class Resolved(ModelFile):
    """A model file's contract, plus what a source knows: its name, its origin, a batch size it suggests."""

    source: ModelSource | None = None
    name: str = ""
    label: str = ""  # recorded as the profile's model_file: 'hf:gpt2', 'timm:resnet50', 'profiles/models/x.py'
    default_batch_size: int | None = None
    notes: list[str] = field(default_factory=list)


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import an optional library, or one line saying which extra of advisor brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name is not None and exc.name != module and not exc.name.startswith(module + "."):
            # the library is there but one of its own dependencies is not, or does not import
            raise UserError(
                f"{what} needs {module}, which fails to import: {exc}",
                f'reinstall it beside this torch: pip install "advisor[{extra}]"',
            ) from None
        raise UserError(f"{what} needs {module}, which is not installed", f'pip install "advisor[{extra}]"') from None
    except Exception as exc:  # noqa: BLE001 - a library that breaks on import (e.g. built for another torch)
        raise UserError(
            f"{what} needs {module}, which fails to import: {type(exc).__name__}: {str(exc).splitlines()[0]}",
            f'install a {module} built for this torch: pip install "advisor[{extra}]"',
        ) from None


def version_of(module: ModuleType) -> str | None:
    """A library's release ('0.29.1'; a local build tag such as '+cu130' says nothing about the model)."""
    version = getattr(module, "__version__", None)
    return str(version).split("+")[0] if version else None


def sha256_json(data: Any) -> str:
    """sha256 of a configuration as canonical JSON (sorted keys, no spaces): the same config, the same hash."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def split_spec(spec: str) -> tuple[str | None, str]:
    """'hf:gpt2' -> ('hf', 'gpt2'); a path or a bare name -> (None, spec)."""
    head, sep, rest = spec.partition(":")
    if sep and head in PREFIXES:
        return head, rest
    return None, spec


def resolve(
    spec: str | Path, *, task: str | None = None, seq_len: int | None = None, trust_remote_code: bool = False
) -> ModelFile:
    """MODEL as typed -> a ModelFile (a Resolved one for everything but a plain model file). Raises UserError."""
    text = str(spec)
    kind, ref = split_spec(text)
    given = {"--task": task is not None, "--seq-len": seq_len is not None, "--trust-remote-code": trust_remote_code}
    used = [option for option, present in given.items() if present]
    if kind != "hf" and used:
        raise UserError(f"{' and '.join(used)} apply to hf: models only, not to {text}", "leave them out")
    if kind == "hf":
        from advisor.profiler.sources.hf import resolve_hf

        return resolve_hf(ref, task=task, seq_len=seq_len, trust_remote_code=trust_remote_code)
    if kind == "timm":
        from advisor.profiler.sources.timm_models import resolve_timm

        return resolve_timm(ref)
    if kind == "torchvision":
        from advisor.profiler.sources.torchvision_models import resolve_torchvision

        return resolve_torchvision(ref)
    path = Path(text)
    if path.is_file():
        return load_model_file(path)
    from advisor.profiler.sources.shipped import resolve_shipped, shipped_names

    if path.suffix != ".py" and len(path.parts) == 1 and text in shipped_names():
        return resolve_shipped(text)
    _not_found(text, path)


def _not_found(text: str, path: Path) -> None:
    import difflib

    from advisor.profiler.sources.shipped import shipped_names

    head, sep, _ = text.partition(":")
    if sep and len(head) > 1 and "/" not in head:
        raise UserError(
            f"unknown model source {head + ':'!r} in {text}",
            "use hf:, timm: or torchvision:, or give a model file",
            difflib.get_close_matches(head, PREFIXES, n=1),
        )
    if path.exists():
        raise UserError(f"{text} is not a file", "give the path of a .py model file")
    names = shipped_names()
    if path.suffix == ".py" or len(path.parts) > 1:
        raise UserError(f"model file {text} does not exist", "check the path")
    raise UserError(
        f"{text}: no such model file, and no shipped model of that name",
        f"give a .py model file, hf:ID, timm:NAME, torchvision:NAME or one of: {', '.join(names)}",
        difflib.get_close_matches(text, names, n=3),
    )
