"""The handoff between a many-thread CPU's cores (Efficiency.handoff): what advisor calibrate measures and how the
estimator prices a step's memory-bound ops by it. Every expected value is derived by hand in the comment beside it."""

from __future__ import annotations

import pytest
from test_op_costs import CPU, table_and_scalar, with_

from advisor.calibration.bench import HANDOFF_ELEMENTS, Point, handoff_points
from advisor.calibration.overlay import handoff_curve
from advisor.estimator.roofline import handoff_factor, op_time

# every rate kept up to 1e5 bytes, half of it from 1e6 on (Efficiency.at: a power law between, flat beyond)
HALF = [{"min_size": 0, "efficiency": 1.0}, {"min_size": 1e6, "efficiency": 0.5}]


def test_the_curve_is_the_matched_time_over_the_cross_time_at_most_one():
    # 1e6 bytes: 10 µs matched, 20 µs when one thread wrote the input -> 0.5; 4e6 bytes: 40 against 32 µs -> 1.25,
    # capped at 1 (no faster than measured alone); the second step starts half-way, sqrt(1e6 * 4e6) = 2e6 bytes
    matched = [Point(1e6, 10e-6), Point(4e6, 40e-6)]
    cross = [Point(1e6, 20e-6), Point(4e6, 32e-6)]
    assert handoff_curve(matched, cross) == [
        {"min_size": 0.0, "efficiency": 0.5},
        {"min_size": 2e6, "efficiency": 1.0},
    ]
    assert handoff_curve([], []) is None


def test_a_memory_bound_call_runs_at_the_handoff_share_of_its_rate():
    eff = with_(handoff=HALF)
    # the fixture: 1e10 B/s at memory efficiency 0.5, 10 µs overhead per op.
    # 2e6 bytes: 2e6 / 5e9 = 400 µs, at half the rate 800 µs, + 10 µs
    assert op_time(CPU, eff, 0.0, 2e6, 1, "memory", "fp32").seconds == pytest.approx(810e-6)
    assert op_time(CPU, with_(), 0.0, 2e6, 1, "memory", "fp32").seconds == pytest.approx(410e-6)
    # 1e5 bytes (the curve's first point stands a decade below the second): the whole rate, 1e5 / 5e9 = 20 µs + 10
    assert op_time(CPU, eff, 0.0, 1e5, 1, "memory", "fp32").seconds == pytest.approx(30e-6)
    # half-way on log axes, 10**5.5 bytes: 0.5 ** 0.5 = 0.7071 of the rate: 10**5.5 / 5e9 = 63.25 µs / 0.7071 =
    # 89.44 µs, + 10 µs
    assert handoff_factor(eff, 10**5.5) == pytest.approx(0.5**0.5)
    assert op_time(CPU, eff, 0.0, 10**5.5, 1, "memory", "fp32").seconds == pytest.approx(99.44e-6, rel=1e-3)


def test_a_compute_bound_call_is_left_alone_and_a_measured_vector_op_pays_its_bytes_at_the_streaming_rate():
    eff = with_(handoff=HALF)
    # 1e8 FLOPs at 1e11 * 0.5 = 2 ms against 2e6 bytes at half of 5e9 B/s = 800 µs: still compute-bound, 2 ms + 10 µs
    assert op_time(CPU, eff, 1e8, 2e6, 1, "matrix", "fp32", op="aten.mm").seconds == pytest.approx(2.01e-3)
    # a vector op with its own curve (0.5): compute 2e8 / (1e11 * 0.5) = 4 ms over memory 2e6 / 5e9 = 400 µs; its
    # input from another core's threads costs its bytes at half the streaming rate, 400 µs more than streaming
    # them, on top: 4.4 ms + 10 µs (not the whole op at half its rate, 8 ms: the work is not where the data is)
    own = with_(handoff=HALF, op_curves={"aten.gelu": [{"min_size": 0, "efficiency": 0.5}]})
    assert op_time(CPU, own, 2e8, 2e6, 1, "vector", "fp32", op="aten.gelu").seconds == pytest.approx(4.41e-3)
    # a random draw at a twentieth of the streaming rate (no FLOPs counted): 2e6 / (1e10 * 0.05) = 4 ms, + 400 µs
    draw = with_(handoff=HALF, op_curves={"aten.bernoulli_": [{"min_size": 0, "efficiency": 0.05}]})
    assert op_time(CPU, draw, 0.0, 2e6, 1, "vector", "fp32", op="aten.bernoulli_").seconds == pytest.approx(4.41e-3)


def test_the_op_table_prices_the_handoff_as_op_time_does():
    from advisor import api

    prof = api.profile_from("mobilenet_v2")
    eff = with_(handoff=HALF)
    got, want, _ = table_and_scalar(prof, eff)
    assert got == pytest.approx(want, rel=1e-12)
    plain, _, _ = table_and_scalar(prof, with_())
    assert (
        got.sum() > plain.sum()
    )  # the curve is read: MobileNetV2's batch norms and ReLUs move more than 1e5 bytes a call


def test_calibrate_times_both_cases_from_the_grain_size_up():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        matched, cross = handoff_points(quick=True, reps=12)
        assert torch.get_num_threads() == 2  # the producer's one thread is not left behind
    finally:
        torch.set_num_threads(threads)
    # quick: every third size of 2**15 .. 2**23 elements, 12 bytes an element (two read, one written)
    sizes = [12.0 * n for n in HANDOFF_ELEMENTS[::3]]
    assert [p.size for p in matched] == [p.size for p in cross] == sizes == [393216.0, 3145728.0, 25165824.0]
    assert all(p.seconds > 0 for p in matched + cross)


def test_calibrates_summary_shows_the_worst_share_and_none_without_a_curve(tmp_path):
    from test_calibrate import fake_measurements

    from advisor.calibration.overlay import build
    from advisor.cli.calibrate import summary

    m = fake_measurements()  # two threads
    # 1e6 bytes 10 against 20 µs -> 0.5; 4e6 bytes 40 against 32 µs -> 1.25, capped at 1: the worst share is 0.5
    m.handoff_matched, m.handoff_cross = [Point(1e6, 10e-6), Point(4e6, 40e-6)], [Point(1e6, 20e-6), Point(4e6, 32e-6)]
    assert summary(build(m), tmp_path / "c.yaml", 1.0)["handoff_min_fraction"] == 0.5
    m.handoff_matched, m.handoff_cross = [], []
    assert summary(build(m), tmp_path / "c.yaml", 1.0)["handoff_min_fraction"] is None
