"""Write a benchmark's generated text into README.md between its two HTML comment markers."""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def write_block(begin: str, end: str, text: str) -> None:
    """Replace what stands between `begin` and `end` in README.md with `text` (a warning if a marker is missing)."""
    body = README.read_text(encoding="utf-8")
    if begin not in body or end not in body:
        print(f"README.md has no {begin} ... {end} markers: tables not written", file=sys.stderr)
        return
    new = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: f"{begin}\n{text}\n{end}", body, flags=re.S)
    README.write_text(new, encoding="utf-8")
