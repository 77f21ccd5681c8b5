"""Training-recipe constants a model file may define, read after the file ran.

- `GLOBAL_BATCH`: samples per optimizer step over all devices in the recipe the model is trained with
  (e.g. 512 sequences of 1024 tokens for GPT-2 124M). The profile records it; estimates and
  recommendations then train at that global batch unless --global-batch says otherwise.
- `GLOBAL_BATCH_SOURCE`: optional text saying where that number comes from (a paper, a recipe), shown with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.errors import UserError


def global_batch(module: Any, path: Path) -> tuple[int | None, str | None]:
    """(GLOBAL_BATCH, GLOBAL_BATCH_SOURCE) of an executed model file, checked; (None, None) when absent."""
    value = getattr(module, "GLOBAL_BATCH", None)
    source = getattr(module, "GLOBAL_BATCH_SOURCE", None)
    if value is None:
        if source is not None:
            raise UserError(f"{path}: GLOBAL_BATCH_SOURCE without GLOBAL_BATCH", "define GLOBAL_BATCH = N as well")
        return None, None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(
            f"{path}: GLOBAL_BATCH must be a positive whole number of samples, got {value!r}",
            "e.g. GLOBAL_BATCH = 512",
        )
    if source is not None and not isinstance(source, str):
        raise UserError(f"{path}: GLOBAL_BATCH_SOURCE must be text, got {type(source).__name__}", "quote it")
    return value, (source.strip() or None) if source else None
