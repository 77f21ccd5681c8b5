"""The accuracy benchmark's order of rows in each round (benchmarks/accuracy.py `rotation`)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_accuracy():
    spec = importlib.util.spec_from_file_location("accuracy_bench", ROOT / "benchmarks" / "accuracy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_round_starts_further_along_so_no_row_is_always_last():
    """52 rows, 5 rounds: round k starts at floor(52k/5) = 0, 10, 20, 31, 41. The first row then runs at positions
    0, 42, 32, 21, 11 (its index less the start, mod 52), the last row at 51, 41, 31, 20, 10: both average 21-31
    places from the sweep before their round, where in order every round the last row ran 51 places from it."""
    rotation = load_accuracy().rotation
    orders = [rotation(52, k, 5) for k in range(5)]
    assert [o[0] for o in orders] == [0, 10, 20, 31, 41]
    assert all(sorted(o) == list(range(52)) for o in orders)
    assert [o.index(0) for o in orders] == [0, 42, 32, 21, 11]
    assert [o.index(51) for o in orders] == [51, 41, 31, 20, 10]
    assert rotation(3, 0, 1) == [0, 1, 2]  # one round: in order
