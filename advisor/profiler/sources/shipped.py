"""A shipped reference model by name (`advisor profile resnet50`): the model file in profiles/models/, profiled at the
per-device batch size it names in BATCH_SIZE unless --batch-size says otherwise."""

from __future__ import annotations

import ast
from pathlib import Path

from advisor.errors import UserError
from advisor.profiler.model_file import load_model_file
from advisor.profiler.schema import ModelSource

DEFAULT_PRECISION = "bf16-mixed"


def models_dir() -> Path:
    from advisor.api import shipped_profiles_dir

    return shipped_profiles_dir() / "models"


def shipped_names() -> list[str]:
    """The reference model files' names (helpers such as _llama.py are not models)."""
    folder = models_dir()
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")) if folder.is_dir() else []


def settings(path: Path) -> tuple[int | None, str]:
    """BATCH_SIZE and PRECISION as a reference model file assigns them, read without running the file."""
    found: dict = {"BATCH_SIZE": None, "PRECISION": DEFAULT_PRECISION}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in found:
                found[node.targets[0].id] = ast.literal_eval(node.value)
    return found["BATCH_SIZE"], found["PRECISION"]


def resolve_shipped(name: str):
    from advisor.profiler.sources import Resolved

    path = models_dir() / f"{name}.py"
    if not path.is_file():
        raise UserError(f"no shipped model {name!r}", f"one of: {', '.join(shipped_names())}")
    mf = load_model_file(path)
    batch, _ = settings(path)
    source = ModelSource(kind="shipped", id=name, config_sha256=mf.sha256)
    return Resolved(
        path=mf.path,
        sha256=mf.sha256,
        build_model=mf.build_model,
        example_batch=mf.example_batch,
        training_step=mf.training_step,
        make_optimizer=mf.make_optimizer,
        source=source,
        name=name,
        label=f"profiles/models/{name}.py",
        default_batch_size=batch,
    )
