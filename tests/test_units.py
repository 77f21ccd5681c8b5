import pytest

from advisor import units
from advisor.errors import UserError


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("80 GB", "size", 80e9),
        ("24 GiB", "size", 24 * 2**30),  # 25,769,803,776
        ("3.35 TB/s", "bandwidth", 3.35e12),
        ("400 Gbps", "bandwidth", 50e9),  # 400e9 bits / 8
        ("3200 Gbit/s", "bandwidth", 400e9),
        ("989.4 TFLOPS", "flops", 989.4e12),
        ("1978.9 TOPS", "flops", 1978.9e12),
        ("90m", "duration", 5400.0),  # 90 × 60
        ("36h", "duration", 129600.0),  # 36 × 3600
        ("2d", "duration", 172800.0),
        ("1w", "duration", 604800.0),
        ("1h30m", "duration", 5400.0),  # 3600 + 1800
        ("5us", "duration", 5e-6),
        ("$1.5k", "money", 1500.0),
        ("500", "money", 500.0),
        ("$2M", "money", 2e6),
        ("1.28M", "count", 1.28e6),
        ("10B", "count", 1e10),
        (7, "size", 7.0),
    ],
)
def test_parse(text, kind, expected):
    assert units.parse(text, kind) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "kind", "fragment"),
    [
        ("3.35 TB/sec", "bandwidth", "unknown unit 'TB/sec'"),
        ("eighty GB", "size", "cannot read"),
        ("12 parsecs", "duration", "unknown unit"),
        (True, "size", "expected a size"),
        (float("nan"), "size", "not a finite number"),
    ],
)
def test_parse_errors(text, kind, fragment):
    with pytest.raises(UserError) as info:
        units.parse(text, kind, "memory")
    assert fragment in info.value.line()
    assert info.value.line().startswith("memory")


@pytest.mark.parametrize("text", ["0h", "-3h", "0"])
def test_parse_positive_rejects_zero_and_negative(text):
    with pytest.raises(UserError) as info:
        units.parse_positive(text, "duration", "--deadline")
    assert "must be positive" in info.value.line()


def test_formatting():
    assert units.fmt_bytes(80e9) == "80 GB"
    assert units.fmt_bandwidth(3.35e12) == "3.35 TB/s"
    assert units.fmt_bits(400e9) == "3.2 Tbps"  # 400 GB/s × 8
    assert units.fmt_duration(5400) == "90 min"
    assert units.fmt_money(1234.5) == "$1,234"


def test_every_example_in_an_error_message_parses():
    # the hint a bad value gets must itself be readable: each quoted example of each kind parses, and a duration's
    # examples cover a per-call cost too (catalog op_setup_s): '120 µs' = 1.2e-4 s, '90m' = 5,400 s
    import re

    for kind, text in units.EXAMPLES.items():
        for example in re.findall(r"'([^']+)'", text):
            units.parse(example, kind, kind)
    assert units.parse("120 µs", "duration", "duration") == pytest.approx(1.2e-4)
    assert units.parse("90m", "duration", "duration") == 5400.0
    with pytest.raises(UserError, match="'120 µs'"):
        units.parse("fast", "duration", "op_setup_s")
