"""Parsing and formatting of quantities: sizes, bandwidths, FLOP rates, durations, money, counts.

Inside the code every quantity is a float in SI base units (bytes, bytes/s, FLOP/s, seconds, USD).
Strings with units exist only in files people write and in what is rendered for them; this module is
the only place that converts between the two.
"""

from __future__ import annotations

import math
import re

from advisor.errors import UserError

_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BIN = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}


def _table() -> dict[str, dict[str, float]]:
    size: dict[str, float] = {}
    bandwidth: dict[str, float] = {}
    flops: dict[str, float] = {}
    frequency: dict[str, float] = {}
    for p, f in _SI.items():
        frequency[f"{p}Hz"] = f
        size[f"{p}B"] = f
        bandwidth[f"{p}B/s"] = f
        bandwidth[f"{p}bit/s"] = f / 8
        bandwidth[f"{p}bps"] = f / 8
        bandwidth[f"{p}b/s"] = f / 8
        for spelling in ("FLOPS", "FLOP/s", "OPS", "OP/s"):
            flops[f"{p}{spelling}"] = f
    for p, f in _BIN.items():
        size[f"{p}B"] = f
        bandwidth[f"{p}B/s"] = f
    size["bytes"] = 1.0
    duration = {
        "s": 1.0,
        "sec": 1.0,
        "second": 1.0,
        "seconds": 1.0,
        "ms": 1e-3,
        "us": 1e-6,
        "µs": 1e-6,
        "ns": 1e-9,
        "m": 60.0,
        "min": 60.0,
        "minute": 60.0,
        "minutes": 60.0,
        "h": 3600.0,
        "hr": 3600.0,
        "hour": 3600.0,
        "hours": 3600.0,
        "d": 86400.0,
        "day": 86400.0,
        "days": 86400.0,
        "w": 604800.0,
        "week": 604800.0,
        "weeks": 604800.0,
    }
    count = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}
    return {
        "size": size,
        "bandwidth": bandwidth,
        "flops": flops,
        "frequency": frequency,
        "duration": duration,
        "count": count,
        "money": {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6},
    }


UNITS = _table()
EXAMPLES = {
    "size": "'80 GB' or '24 GiB'",
    "bandwidth": "'3.35 TB/s' or '400 Gbps'",
    "flops": "'989 TFLOPS'",
    "frequency": "'1410 MHz' or '1.98 GHz'",
    "duration": "'90m', '36h', '2d' or '120 µs'",
    "count": "'1.28M' or '10B'",
    "money": "'$500' or '$1.5k'",
}
_UNSIGNED = r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_NUMBER = rf"[-+]?{_UNSIGNED}"
_ONE = re.compile(rf"^\s*({_NUMBER})\s*([^\d\s]+)?\s*$")
_PART = re.compile(rf"({_NUMBER})\s*([a-zA-Zµ]+)")


def parse(value: object, kind: str, what: str = "value", bare: bool = True) -> float:
    """Parse `value` (a number in base units, or a string with a unit) into a float in base units.

    Raises UserError naming `what` when the text is not a number, or the unit is unknown for `kind`. With
    `bare=False` a text without a unit is refused unless it is 0 (files name their base unit in the field,
    `op_overhead_s`; a person typing `--deadline 3` may mean hours)."""
    table = UNITS[kind]
    if isinstance(value, bool):
        raise UserError(f"{what}: expected a {kind}, got {value!r}", f"write it like {EXAMPLES[kind]}")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip().replace(",", "").replace("_", "")
        if kind == "money":
            text = re.sub(r"^(?:\$|usd\s*)|\s*usd$", "", text, flags=re.IGNORECASE)
        number = _parse_text(text, table, kind, what, value, bare)
    else:
        raise UserError(f"{what}: expected a {kind}, got {value!r}", f"write it like {EXAMPLES[kind]}")
    if not math.isfinite(number):
        raise UserError(f"{what}: {value!r} is not a finite number", f"write it like {EXAMPLES[kind]}")
    return number


def _parse_text(text: str, table: dict[str, float], kind: str, what: str, original: object, bare: bool) -> float:
    match = _ONE.match(text)
    if match:
        number, unit = float(match.group(1)), match.group(2) or ""
        if not unit and not bare and number != 0:  # "3" could be seconds, hours or days: say which
            raise UserError(
                f"{what}: {original!r} has no unit", f"write it like {EXAMPLES[kind]} (or '{text}s' for seconds)"
            )
        if not unit:  # a bare number is in base units
            return number
        if unit in table:
            return number * table[unit]
        folded = {k.lower(): v for k, v in table.items()}
        if kind not in ("size", "bandwidth") and unit.lower() in folded:
            return number * folded[unit.lower()]
        raise UserError(
            f"{what}: unknown unit {unit!r} in {original!r}",
            f"use one of {', '.join(sorted(u for u in table if u)[:12])}; for example {EXAMPLES[kind]}",
        )
    if kind == "duration":  # compound durations such as '1h30m' or '2d 12h' (no signs: '1h-30m' is a typo)
        parts = _PART.findall(text)
        if parts and re.fullmatch(rf"(?:\s*{_UNSIGNED}\s*[a-zA-Zµ]+)+\s*", text):
            total = 0.0
            for number, unit in parts:
                if unit not in table:
                    raise UserError(f"{what}: unknown unit {unit!r} in {original!r}", f"write it like {EXAMPLES[kind]}")
                total += float(number) * table[unit]
            return total
    raise UserError(f"{what}: cannot read {original!r} as a {kind}", f"write it like {EXAMPLES[kind]}")


def parse_positive(value: object, kind: str, what: str) -> float:
    """Like `parse`, but the quantity must be strictly positive (a deadline, a budget), and a duration
    typed on the command line must carry its unit."""
    number = parse(value, kind, what, bare=kind != "duration")
    if number <= 0:
        raise UserError(f"{what} must be positive, got {value!r}", f"write it like {EXAMPLES[kind]}")
    return number


# ---- formatting (for people; machines get the raw numbers) ----


def _scaled(value: float, steps: list[tuple[float, str]], digits: int = 3) -> str:
    for factor, suffix in steps:
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {suffix}".rstrip()
    factor, suffix = steps[-1]
    return f"{value / factor:.{digits}g} {suffix}".rstrip()


def fmt_bytes(n: float) -> str:
    return _scaled(n, [(1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B")])


def fmt_bandwidth(n: float) -> str:
    return _scaled(n, [(1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1, "B/s")])


def fmt_bits(bytes_per_s: float) -> str:
    """A network rate, shown in bits per second as networks are sold."""
    return _scaled(bytes_per_s * 8, [(1e12, "Tbps"), (1e9, "Gbps"), (1e6, "Mbps"), (1, "bps")])


def fmt_flops(n: float) -> str:
    return _scaled(n, [(1e15, "PFLOP/s"), (1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1e6, "MFLOP/s"), (1, "FLOP/s")])


def fmt_count(n: float) -> str:
    return _scaled(n, [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"), (1, "")])


def fmt_duration(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86400:.3g} d"


def fmt_money(usd: float) -> str:
    if abs(usd) >= 100:
        return f"${usd:,.0f}"
    return f"${usd:,.2f}"
