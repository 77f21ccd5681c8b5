"""Marks that tables put beside a figure: prices older than a year, owned machines at amortized prices."""

from __future__ import annotations

import datetime as dt

STALE_AFTER_DAYS = 365
OLD_PRICE = "†"
OWNED = "owned, amortized"


def stale(as_of: dt.date | str | None, today: dt.date | None = None) -> bool:
    """True when a price read on `as_of` is more than a year old."""
    if as_of is None:
        return False
    if isinstance(as_of, str):
        as_of = dt.date.fromisoformat(as_of)
    return ((today or dt.date.today()) - as_of).days > STALE_AFTER_DAYS


def old_price_note(dates: list) -> str | None:
    """The footnote for the flagged prices in a table, or None when none is old."""
    old = sorted({str(d) for d in dates if stale(d)})
    if not old:
        return None
    return (
        f"{OLD_PRICE} price more than a year old (as of {', '.join(old[:3])}{', …' if len(old) > 3 else ''}): "
        "check it, or refresh with 'advisor catalog import-skypilot'"
    )
