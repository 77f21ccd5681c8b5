"""CPU costs a model's step pays and the calibration's ops alone do not (issue 10): memory-bound ops run in turn,
each output landing in memory no recent op touched (Efficiency.vector_in_turn), no fresh output written faster than a
step of its size writes them (Efficiency.fresh_output), and a linear layer's bias written
into its output and read back by the GEMM (Efficiency.gemm_bias_passes), and a GEMM's output written into memory no
recent op touched (Efficiency.gemm_output_passes). What advisor calibrate measures, how the
overlay reads it and how the estimator prices it. Every expected value is derived by hand in the comment beside it."""

from __future__ import annotations

import pytest
from test_op_costs import CPU, FLAT, record, table_and_scalar, with_

from advisor.calibration.bench import FRESH_FOOTPRINTS, IN_TURN_ELEMENTS, Clock, Point, fresh_points, in_turn_points
from advisor.calibration.kernels import BIAS_SHAPES, bias_points, output_points
from advisor.calibration.overlay import bias_passes, fresh_curve, in_turn_curve
from advisor.estimator import kernels
from advisor.estimator.roofline import fresh_output_s, in_turn_factor, op_time, profile_op_time, stream_extra_s
from advisor.profiler.schema import Linear

# every rate kept up to 1e5 bytes, half of it from 1e6 on (Efficiency.at: a power law between, flat beyond)
HALF = [{"min_size": 0, "efficiency": 1.0}, {"min_size": 1e6, "efficiency": 0.5}]
TENTH = [{"min_size": 0, "efficiency": 0.1}]  # fresh outputs at a tenth of the bandwidth, whatever the step


def test_the_curve_is_the_time_added_in_turn_as_a_share_of_the_streaming_rate():
    # memory curve flat at 0.5 of 1e10 B/s: streaming 1e5 bytes takes 1e5 / 5e9 = 20 µs. 1e5 bytes: 10 µs alone (a
    # vector op faster than streaming: in the cache), 15 µs in turn: 5 µs added -> 20 / (20 + 5) = 0.8; 4e6 bytes:
    # 40 against 100 µs, 2.5x, past MAX_IN_TURN (2): a disturbed measurement, nothing added (1); 1.6e7 bytes: 80
    # against 60 µs, faster in turn: nothing added (1). Steps start half-way: sqrt(1e5 * 4e6) = 6.325e5,
    # sqrt(4e6 * 1.6e7) = 8e6
    alone = [Point(1e5, 10e-6), Point(4e6, 40e-6), Point(1.6e7, 80e-6)]
    turn = [Point(1e5, 15e-6), Point(4e6, 100e-6), Point(1.6e7, 60e-6)]
    assert in_turn_curve(alone, turn, 1e10, FLAT) == [
        {"min_size": 0.0, "efficiency": 0.8},
        {"min_size": 6.325e5, "efficiency": 1.0},
        {"min_size": 8e6, "efficiency": 1.0},
    ]
    # a slow op (GELU-like: 60 µs alone, 75 in turn): the same 15 µs added over 20 µs of streaming, 20 / 35 = 0.5714,
    # where the old ratio of rates (60 / 75 = 0.8) would have priced a fast op's in-turn cost at a fifth of its time
    assert in_turn_curve([Point(1e5, 60e-6)], [Point(1e5, 75e-6)], 1e10, FLAT) == [
        {"min_size": 0.0, "efficiency": 0.5714}
    ]
    assert in_turn_curve([], [], 1e10, FLAT) is None


def test_running_in_turn_adds_the_bytes_at_the_streaming_rate_but_not_to_matrix_ops_or_the_optimizer():
    eff = with_(vector_in_turn=HALF)
    # the fixture: 1e10 B/s at memory efficiency 0.5, 10 µs overhead per op.
    # 2e6 bytes: streaming 2e6 / 5e9 = 400 µs; in turn at half the rate 800 µs, 400 added: 800 µs + 10 µs
    assert op_time(CPU, eff, 0.0, 2e6, 1, "memory", "fp32", phase="forward").seconds == pytest.approx(810e-6)
    assert op_time(CPU, eff, 0.0, 2e6, 1, "vector", "fp32", phase="backward").seconds == pytest.approx(810e-6)
    assert stream_extra_s(CPU, eff, 2e6, 2e6, 0.5) == pytest.approx(400e-6)
    assert stream_extra_s(CPU, eff, 2e6, 2e6, 1.0) == 0.0
    # the optimizer's updates are looked up by the step's traffic instead: nothing added, 400 + 10 µs
    assert op_time(CPU, eff, 0.0, 2e6, 1, "memory", "fp32", phase="optimizer").seconds == pytest.approx(410e-6)
    # a GEMM bound by its bytes (1e3 FLOPs): 400 µs + 10, untouched
    assert op_time(CPU, eff, 1e3, 2e6, 1, "matrix", "fp32", phase="forward", op="aten.mm").seconds == pytest.approx(
        410e-6
    )
    # an op in place writes where it read (a ReLU in place, a dropout's draw): nothing added, 400 + 10 µs
    assert op_time(CPU, eff, 0.0, 2e6, 1, "vector", "fp32", phase="forward", op="aten.relu_").seconds == pytest.approx(
        410e-6
    )
    # a measured vector op pays the same 400 µs on top of its own time, however slow that is. Own curve 0.5:
    # compute 2e8 / (1e11 * 0.5) = 4 ms over memory 2e6 / (1e10 * 0.5) = 400 µs: 4 ms + 400 µs + 10 µs (a rate
    # share of its own time would have added nothing to this compute-bound op, or 4 ms to a memory-bound one as
    # slow); with 2e7 FLOPs (400 µs of compute) 400 + 400 + 10 µs
    own = with_(vector_in_turn=HALF, op_curves={"aten.gelu": [{"min_size": 0, "efficiency": 0.5}]})
    assert op_time(CPU, own, 2e8, 2e6, 1, "vector", "fp32", phase="forward", op="aten.gelu").seconds == pytest.approx(
        4.41e-3
    )
    assert op_time(CPU, own, 2e7, 2e6, 1, "vector", "fp32", phase="forward", op="aten.gelu").seconds == pytest.approx(
        810e-6
    )
    # an own curve at a tenth of the streaming rate (a max pool's windows): 2e6 / (1e10 * 0.05) = 4 ms, + 400 µs
    slow = with_(vector_in_turn=HALF, op_curves={"aten.max_pool2d_with_indices": [{"min_size": 0, "efficiency": 0.05}]})
    t = op_time(CPU, slow, 0.0, 2e6, 1, "vector", "fp32", phase="forward", op="aten.max_pool2d_with_indices")
    assert t.seconds == pytest.approx(4.41e-3)
    # half-way on log axes, 10**5.5 bytes: 0.5 ** 0.5 of the rate
    assert in_turn_factor(eff, 10**5.5, "vector", "forward") == pytest.approx(0.5**0.5)
    assert in_turn_factor(with_(), 10**5.5, "vector", "forward") == 1.0
    # with the handoff too (two threads): the call at half the rate, 800 µs, and 400 µs in turn on top: 1.2 ms + 10
    both = with_(vector_in_turn=HALF, handoff=HALF)
    assert op_time(CPU, both, 0.0, 2e6, 1, "memory", "fp32", phase="forward").seconds == pytest.approx(1.21e-3)


def test_the_fresh_output_curve_is_the_chains_rate_by_the_steps_bytes():
    # each op of the chain writes 2**18 floats, 1,048,576 bytes; bandwidth 1e11 B/s. Over 8 MiB 100 µs an op:
    # 1.048576e10 B/s, 0.1049 of the bandwidth; over 512 MiB 200 µs: 0.0524. The second step starts half-way:
    # sqrt(2**23 * 2**29) = 2**26 = 6.711e7
    fresh = [Point(8 << 20, 100e-6), Point(512 << 20, 200e-6)]
    assert fresh_curve(fresh, 1e11) == [
        {"min_size": 0.0, "efficiency": 0.1049},
        {"min_size": 6.711e7, "efficiency": 0.0524},
    ]
    # faster than the bandwidth (1e10 B/s here): held at 1
    assert fresh_curve([Point(8 << 20, 100e-6)], 1e10) == [{"min_size": 0.0, "efficiency": 1.0}]
    assert fresh_curve([], 1e11) is None


def test_no_fresh_output_is_written_faster_than_a_step_writes_them_but_slow_ops_pay_nothing_more():
    eff = with_(fresh_output=TENTH)
    # the fixture: 1e10 B/s at memory efficiency 0.5, 10 µs overhead per op. A call of 2e6 bytes, 1e6 of them
    # written: streaming 2e6 / 5e9 = 400 µs; its output at a tenth of 1e10 B/s: 1e6 / 1e9 = 1 ms, the floor
    assert fresh_output_s(CPU, eff, 1e6, 1e9, "memory", "forward", None) == pytest.approx(1e-3)
    assert op_time(CPU, eff, 0.0, 2e6, 1, "memory", "fp32", phase="forward", written=1e6).seconds == pytest.approx(
        1.01e-3
    )
    # 1e5 written: 100 µs, under the 400 µs of streaming: 410 µs as without
    assert op_time(CPU, eff, 0.0, 2e6, 1, "vector", "fp32", phase="backward", written=1e5).seconds == pytest.approx(
        410e-6
    )
    # two calls of 1e6 written each (2e6 in all): 1 ms each, 2 ms + 20 µs
    assert op_time(CPU, eff, 0.0, 4e6, 2, "memory", "fp32", phase="forward", written=2e6).seconds == pytest.approx(
        2.02e-3
    )
    # not the optimizer's updates (looked up by the step's traffic instead), a GEMM (1e3 FLOPs, bound by its bytes)
    # or an op in place (a ReLU in place writes where it read): 400 + 10 µs each
    for phase, category, op in (
        ("optimizer", "memory", None),
        ("forward", "matrix", "aten.mm"),
        ("forward", "vector", "aten.relu_"),
    ):
        t = op_time(CPU, eff, 1e3, 2e6, 1, category, "fp32", phase=phase, op=op, written=1e6)
        assert t.seconds == pytest.approx(410e-6)
    # a measured op slower than the floor writes its output while it computes: nothing added. Own curve 0.5:
    # compute 2e8 / (1e11 * 0.5) = 4 ms: 4 ms + 10 µs; with 2e7 FLOPs (400 µs of compute) the floor, 1 ms + 10 µs
    own = with_(fresh_output=TENTH, op_curves={"aten.gelu": [{"min_size": 0, "efficiency": 0.5}]})
    for flops, want in ((2e8, 4.01e-3), (2e7, 1.01e-3)):
        t = op_time(CPU, own, flops, 2e6, 1, "vector", "fp32", phase="forward", op="aten.gelu", written=1e6)
        assert t.seconds == pytest.approx(want)
    # the floor is under the whole call, its separate passes included: 1e6 bytes of serial passes (a zeroed gradient
    # table) 200 µs and the op's own 1e6 bytes 200 µs, 400 µs under the 1 ms floor: 1 ms + 10 µs
    t = op_time(CPU, eff, 0.0, 1e6, 1, "memory", "fp32", phase="backward", written=1e6, serial_bytes=1e6)
    assert t.seconds == pytest.approx(1.01e-3)
    # with the cost of running in turn (HALF: 400 µs added to the 400 of streaming) still under the floor: 1 ms + 10
    both = with_(fresh_output=TENTH, vector_in_turn=HALF)
    assert op_time(CPU, both, 0.0, 2e6, 1, "memory", "fp32", phase="forward", written=1e6).seconds == pytest.approx(
        1.01e-3
    )
    # without the figure, or writing nothing: no floor
    assert fresh_output_s(CPU, with_(), 1e6, 1e9, "memory", "forward", None) == 0.0
    assert fresh_output_s(CPU, eff, 0.0, 1e9, "memory", "forward", None) == 0.0


def test_the_floor_is_looked_up_by_the_steps_bytes():
    # 0.4 of the bandwidth for a step of up to 1e7 bytes (the first step stands a decade below the second), 0.1 from
    # 1e8: 1e6 written over 4e9 B/s = 250 µs; over 1e9 B/s = 1 ms; half-way on log axes (10**7.5 bytes) 0.4 *
    # (0.1 / 0.4) ** 0.5 = 0.2: 500 µs. Without a footprint, the call's own bytes (2e6: 250 µs, under its 400 µs)
    eff = with_(fresh_output=[{"min_size": 0, "efficiency": 0.4}, {"min_size": 1e8, "efficiency": 0.1}])
    assert fresh_output_s(CPU, eff, 1e6, 1e6, "memory", "forward", None) == pytest.approx(250e-6)
    assert fresh_output_s(CPU, eff, 1e6, 1e9, "memory", "forward", None) == pytest.approx(1e-3)
    assert fresh_output_s(CPU, eff, 1e6, 10**7.5, "memory", "forward", None) == pytest.approx(500e-6)
    assert op_time(CPU, eff, 0.0, 2e6, 1, "memory", "fp32", phase="forward", written=1e6).seconds == pytest.approx(
        410e-6
    )
    # a profile record: 1e5 bytes read and 1e5 written a sample, at batch 10 (2e6 bytes, 1e6 written) in a step of
    # 1e9 bytes: the 1 ms floor + 10 µs
    op = record("aten.gelu", category="vector").model_copy(
        update={"bytes_read": Linear(per_sample=1e5), "bytes_written": Linear(per_sample=1e5)}
    )
    assert profile_op_time(op, CPU, eff, "fp32", "fp32", 10, step_bytes=1e9).seconds == pytest.approx(1.01e-3)


def test_the_op_table_prices_both_as_the_scalar_path_does():
    from advisor import api

    for name, fields in (
        ("mobilenet_v2", {"vector_in_turn": HALF}),
        ("mobilenet_v2", {"vector_in_turn": HALF, "fresh_output": TENTH}),
        ("bert_base", {"fresh_output": TENTH}),
        ("bert_base", {"gemm_bias_passes": 2.0}),
        ("bert_base", {"gemm_output_passes": 1.5}),
        ("mobilenet_v2", {"gemm_output_passes": 1.5}),
    ):
        prof = api.profile_from(name)
        got, want, _ = table_and_scalar(prof, with_(**fields))
        assert got == pytest.approx(want, rel=1e-12)
        plain, _, _ = table_and_scalar(prof, with_())
        # MobileNetV2's batch norms and ReLUs, and its classifier's addmm; BERT's linear layers are addmm
        assert got.sum() > plain.sum()


def test_the_bias_passes_are_the_addmm_less_the_mm_over_a_pass_of_the_output():
    # memory curve flat at 0.5 of 1e10 B/s: a pass over 1e6 bytes takes 1e6 / 5e9 = 200 µs. Layers of 1e6 bytes out:
    # addmm 400, 200 and 600 µs over their mm -> 2, 1 and 3 passes: the median, 2. A layer whose addmm came out
    # faster than its mm counts 0 passes: median of (2, 0, 3) is 2 as well
    plain = [Point(1e6, 1e-3), Point(1e6, 2e-3), Point(1e6, 3e-3)]
    biased = [Point(1e6, 1.4e-3), Point(1e6, 2.2e-3), Point(1e6, 3.6e-3)]
    assert bias_passes(plain, biased, 1e10, FLAT) == pytest.approx(2.0)
    biased[1] = Point(1e6, 1.9e-3)
    assert bias_passes(plain, biased, 1e10, FLAT) == pytest.approx(2.0)
    assert bias_passes([], [], 1e10, FLAT) is None


def test_a_linear_layers_bias_adds_its_passes_over_the_output():
    eff = with_(gemm_bias_passes=2.0)
    # an addmm writing 1e4 bytes a sample at batch 10 (1e5 bytes), 2 passes: 2e5 bytes a call of their own at
    # 0.5 * 1e10 B/s = 40 µs on top of the GEMM. The GEMM: 1e6 FLOPs a sample, 1e7 at 1e11 * 0.5 = 200 µs (its
    # 1e5 bytes: 20 µs, not binding), + 10 µs overhead
    op = record("aten.addmm", flops=1e6)
    op = op.model_copy(update={"bytes_written": Linear(per_sample=1e4)})
    assert kernels.bias_bytes(op, eff) == 2e4 and kernels.bias_bytes(op, with_()) == 0.0
    assert profile_op_time(op, CPU, eff, "fp32", "fp32", 10).seconds == pytest.approx(250e-6)
    assert profile_op_time(op, CPU, with_(), "fp32", "fp32", 10).seconds == pytest.approx(210e-6)
    # an mm (no bias) pays none
    mm = op.model_copy(update={"op": "aten.mm"})
    assert profile_op_time(mm, CPU, eff, "fp32", "fp32", 10).seconds == pytest.approx(210e-6)


def test_a_gemms_fresh_output_adds_its_passes_over_the_output():
    eff = with_(gemm_output_passes=1.5)
    # an mm writing 1e4 bytes a sample at batch 10 (1e5 bytes), 1.5 passes: 1.5e5 bytes a call of their own at
    # 0.5 * 1e10 B/s = 30 µs on top of the GEMM (200 µs, its bytes not binding, as above) and the 10 µs overhead
    op = record("aten.mm", flops=1e6).model_copy(update={"bytes_written": Linear(per_sample=1e4)})
    assert kernels.output_bytes(op, eff) == 1.5e4 and kernels.output_bytes(op, with_()) == 0.0
    assert profile_op_time(op, CPU, eff, "fp32", "fp32", 10).seconds == pytest.approx(240e-6)
    # an addmm with both figures: 2 + 1.5 passes, 3.5e5 bytes = 70 µs: 280 µs
    both = with_(gemm_output_passes=1.5, gemm_bias_passes=2.0)
    addmm = op.model_copy(update={"op": "aten.addmm"})
    assert profile_op_time(addmm, CPU, both, "fp32", "fp32", 10).seconds == pytest.approx(280e-6)
    # the same output from a convolution, or from an optimizer's GEMM, pays none: 210 µs
    for other in (op.model_copy(update={"op": "aten.convolution"}), op.model_copy(update={"phase": "optimizer"})):
        assert kernels.output_bytes(other, eff) == 0.0
    assert profile_op_time(op.model_copy(update={"op": "aten.convolution"}), CPU, eff, "fp32", "fp32", 10).seconds == (
        pytest.approx(210e-6)
    )


def test_the_output_passes_are_the_rotating_outputs_less_one_output():
    from test_calibrate import fake_measurements

    from advisor.calibration.overlay import build
    from advisor.cli.calibrate import summary

    m = fake_measurements()
    # the fake's memory curve: 0.5 of its 2e10 B/s peak below 1e6 bytes, all of it from 1e6 on. Layers of 1e8 bytes
    # out (a pass: 1e8 / 2e10 = 5 ms): rotating outputs 5 and 10 ms over one output -> 1 and 2 passes, and one
    # faster rotating -> 0; the median, 1
    m.output_again = [Point(1e8, 20e-3)] * 3
    m.output_rotating = [Point(1e8, 25e-3), Point(1e8, 30e-3), Point(1e8, 19e-3)]
    data = build(m)
    assert data["efficiency"][0]["gemm_output_passes"] == pytest.approx(1.0)
    assert summary(data, None, 1.0)["gemm_output_passes"] == pytest.approx(1.0)
    m.output_again = m.output_rotating = []  # not measured (a GPU): no figure
    assert "gemm_output_passes" not in build(m)["efficiency"][0]


def test_calibrate_times_the_chain_and_the_layers():
    clock = Clock("cpu", 1e-4, 2)
    alone, turn = in_turn_points("cpu", clock, quick=True)
    # quick: every third size of 2**10 .. 2**22 elements (4**5 .. 4**11), 8 bytes an element (read and written)
    assert [p.size for p in alone] == [p.size for p in turn] == [8.0 * n for n in IN_TURN_ELEMENTS[::3]]
    assert [p.size for p in alone] == [8192.0, 524288.0, 33554432.0]
    assert all(p.seconds > 0 for p in alone + turn)
    fresh = fresh_points("cpu", clock, quick=True)
    # quick: the first and last footprints, 8 MiB and 512 MiB
    assert [p.size for p in fresh] == [float(f) for f in FRESH_FOOTPRINTS[::3]] == [8388608.0, 536870912.0]
    assert all(p.seconds > 0 for p in fresh)
    plain, biased = bias_points("cpu", clock, quick=True)
    # quick: every other layer, 4 bytes an output element: 1024 x 384 and 4096 x 256
    assert [p.size for p in plain] == [p.size for p in biased] == [4.0 * r * c for r, _, c in BIAS_SHAPES[::2]]
    assert [p.size for p in plain] == [1572864.0, 4194304.0]
    assert all(p.seconds > 0 for p in plain + biased)
    again, rotating = output_points("cpu", clock, quick=True)
    # the same layers, by the same output bytes
    assert [p.size for p in again] == [p.size for p in rotating] == [1572864.0, 4194304.0]
    assert all(p.seconds > 0 for p in again + rotating)


def test_calibrates_summary_shows_both(tmp_path):
    from test_calibrate import fake_measurements

    from advisor.calibration.overlay import build
    from advisor.cli.calibrate import summary

    m = fake_measurements()
    # 1e5 bytes 10 against 15 µs in turn -> 0.6667 of the rate, the worst (and only) size
    m.vector_alone, m.vector_turn = [Point(1e5, 10e-6)], [Point(1e5, 15e-6)]
    s = summary(build(m), tmp_path / "c.yaml", 1.0)
    assert s["in_turn_min_fraction"] == 0.6667 and s["gemm_bias_passes"] is None
    assert s["fresh_output_rate"] is None
    # 2**20 bytes an op in 1 ms over 8 MiB, 2 ms over 512 MiB: 1.048576e9 and 5.24288e8 B/s, over the fake's
    # bandwidth (its copy peak, 2e10 B/s) 0.0524 and 0.0262, stored to 4 places: 1.048e9 and 5.24e8 B/s back
    m.fresh = [Point(8 << 20, 1e-3), Point(512 << 20, 2e-3)]
    assert summary(build(m), tmp_path / "c.yaml", 1.0)["fresh_output_rate"] == pytest.approx([1.048e9, 5.24e8])
    m.vector_alone, m.vector_turn = [], []
    assert summary(build(m), tmp_path / "c.yaml", 1.0)["in_turn_min_fraction"] is None
