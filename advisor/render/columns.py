"""Tables that fit the terminal: columns chosen by priority, long names abbreviated by their meaningful tail,
numbers never cut.

Each column has a priority: 0 is always shown; when the table is wider than the console, the columns with
the highest priority number go first (ties: the rightmost). What still does not fit is narrowed: columns
with a `shorten` rule (op and module names: `aten._foreach_addcdiv_` → `_foreach_addcdiv_` → `…addcdiv_`)
are abbreviated, other text columns wrap, and columns marked `keep` (money, ranks, times) are never cut or
wrapped. `wide=True` shows every column at its full width (`--wide`). JSON and YAML are not affected.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table
from rich.text import Text

ELLIPSIS = "…"


def console_width(default: int = 220) -> int | None:
    """$COLUMNS when set, else the terminal's width (None lets rich ask it), else `default` for piped output."""
    value = os.environ.get("COLUMNS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    return None if sys.stdout.isatty() else default


def make_console() -> Console:
    return Console(soft_wrap=False, width=console_width())


def tail(text: str, width: int) -> str:
    """An op or module name by its meaningful end: without the `aten.` prefix, then cut from the left."""
    text = text.removeprefix("aten.")
    if len(text) <= width:
        return text
    return ELLIPSIS + text[len(text) - (width - 1) :] if width > 1 else ELLIPSIS


@dataclass(frozen=True)
class Col:
    header: str
    priority: int = 0  # 0: always shown; higher numbers are dropped first
    right: bool = False
    keep: bool = False  # never cut or wrapped: money, ranks, times
    shorten: Callable[[str, int], str] | None = None  # abbreviates a cell to a width instead of wrapping
    wrap: bool = False  # may wrap at spaces: counts as its longest word when choosing the columns to drop
    min_width: int = 8  # how narrow a shortened or wrapped column may get


def _plain(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _natural(cols: Sequence[Col], rows: Sequence[Sequence[object]]) -> list[int]:
    widths = [len(c.header) for c in cols]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], max((len(line) for line in _plain(cell).splitlines()), default=0))
    return widths


def _word_width(cols: Sequence[Col], rows: Sequence[Sequence[object]], widths: list[int]) -> list[int]:
    """Widths for choosing what to drop: a wrapping column as narrow as its longest word (its cells wrap at
    spaces), so that a column which tells rows apart (precision, strategy) wraps rather than disappears."""
    out = list(widths)
    for i, col in enumerate(cols):
        if col.wrap and rows:
            words = [len(w) for text in (col.header, *(_plain(r[i]) for r in rows)) for w in text.split()]
            out[i] = min(widths[i], max(col.min_width, *words))
    return out


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + 3 * len(widths) + 1  # rich's default box: padding 1 each side and a border per column


def fit(cols: Sequence[Col], rows: Sequence[Sequence[object]], width: int | None, wide: bool = False):
    """(columns kept, rows with only their cells, widths) for a console `width` columns wide."""
    cols, rows = list(cols), [list(r) for r in rows]
    widths = _natural(cols, rows)
    if wide or width is None:
        return cols, rows, widths
    order = sorted((i for i, c in enumerate(cols) if c.priority > 0), key=lambda i: (-cols[i].priority, -i))
    narrow = _word_width(cols, rows, widths)
    dropped = {i for i, c in enumerate(cols) if c.priority > 0 and rows and not any(_plain(r[i]).strip() for r in rows)}
    for i in order:
        if _total([w for j, w in enumerate(narrow) if j not in dropped]) <= width:
            break
        dropped.add(i)
    keep = [i for i in range(len(cols)) if i not in dropped]
    cols, widths = [cols[i] for i in keep], [widths[i] for i in keep]
    rows = [[r[i] for i in keep] for r in rows]
    excess = _total(widths) - width
    for i in sorted(range(len(cols)), key=lambda i: -widths[i]):  # abbreviate the widest first
        if excess <= 0:
            break
        col = cols[i]
        if col.shorten is None or widths[i] <= col.min_width:
            continue
        target = max(col.min_width, widths[i] - excess)
        for r in rows:
            r[i] = col.shorten(_plain(r[i]), target)
        excess -= widths[i] - target
        widths[i] = target
    narrow = _word_width(cols, rows, widths)
    for i in sorted(range(len(cols)), key=lambda i: -widths[i]):  # then wrap the widest at spaces
        if excess <= 0:
            break
        if cols[i].wrap and widths[i] > narrow[i]:
            target = max(narrow[i], widths[i] - excess)
            excess -= widths[i] - target
            widths[i] = target
    return cols, rows, widths


def table(
    title: str | None,
    cols: Sequence[Col],
    rows: Sequence[Sequence[object]],
    width: int | None = None,
    wide: bool = False,
) -> Table:
    """A rich table of `rows` fitted to `width` columns (see the module docstring)."""
    kept, cells, widths = fit(cols, rows, width, wide)
    out = Table(title=title, title_justify="left")
    for col, w in zip(kept, widths, strict=True):
        out.add_column(
            col.header,
            justify="right" if col.right else "left",
            no_wrap=col.keep or wide,
            min_width=w if (col.keep or wide) else None,
            width=w if (col.wrap and not wide) else None,
            overflow="fold",
        )
    for row in cells:
        out.add_row(*(c if isinstance(c, Text) else str(c) for c in row))
    return out


def print_table(console: Console, title: str | None, cols, rows, wide: bool = False) -> list[str]:
    """Fit to the console and print; with `wide`, at full width even past the console's edge. Returns the
    headers of the columns shown."""
    t = table(title, cols, rows, console.width, wide)
    if wide:  # rich never prints wider than its console: widen it for this table
        before = console.width
        console.width = max(before, _total(_natural(cols, rows)))
        try:
            console.print(t)
        finally:
            console.width = before
    else:
        console.print(t)
    return [str(c.header) for c in t.columns]
