"""The part of a cached profile's key that says which profiler made it: the profiler's own source files, so a
change to how ops are counted (the optimizer's steady-state step, 2026-12-04) never reuses a stale profile."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

PROFILER = Path(__file__).resolve().parents[1] / "advisor" / "profiler"


@cache
def profiler_digest() -> bytes:
    """sha256 over advisor/profiler/**/*.py (path and text), as bytes to fold into a cache key."""
    h = hashlib.sha256()
    for path in sorted(PROFILER.rglob("*.py")):
        h.update(str(path.relative_to(PROFILER)).encode())
        h.update(path.read_bytes())
    return h.digest()
