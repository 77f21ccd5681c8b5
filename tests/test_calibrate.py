"""Calibration: the overlay it writes validates and loads as local-cpu; the roofline's calibrated fields."""

from __future__ import annotations

import json
import platform

import pytest
import yaml
from conftest import assert_user_error, run_cli

from advisor.calibration.bench import Measurements, Point
from advisor.calibration.overlay import build, models
from advisor.catalog.load import load_catalog, overlay_paths, user_dir
from advisor.catalog.schema import Device, Efficiency
from advisor.estimator.roofline import op_time

DEVICE = Device(
    id="toy-cpu",
    name="Toy CPU",
    vendor="acme",
    kind="cpu",
    efficiency="toy",
    cores=2,
    threads_per_core=1,
    memory_bandwidth=1e10,
    vector_flops={"fp32": 1e11},
    tdp_watts=10,
    launch_year=2025,
    source="a test fixture",
    as_of="2026-12-01",
)
EFF = Efficiency(
    id="toy",
    note="hand-made for tests",
    matrix=[{"min_size": 0, "efficiency": 0.5}],
    vector=0.1,
    memory=[{"min_size": 0, "efficiency": 0.5}],
    op_overhead_s=10e-6,
    device_link=0.5,
    network=0.5,
    collective_latency_s=1e-5,
    matrix_by_dtype={"fp32": [{"min_size": 0, "efficiency": 0.25}, {"min_size": 1e6, "efficiency": 0.8}]},
    phase_overhead_s={"backward": 30e-6},
)


def test_matmul_on_vector_units_follows_its_dtype_curve_and_phase_overhead():
    # 2 calls of 1e6 FLOPs, 1e4 bytes each. fp32 curve at 1e6: 0.8 -> 1e6 / (1e11 * 0.8) = 12.5 µs per call;
    # memory 1e4 / (1e10 * 0.5) = 2 µs; backward overhead 30 µs per call: 2 * (12.5 + 30) = 85 µs.
    t = op_time(DEVICE, EFF, 2e6, 2e4, 2, "matrix", "fp32", phase="backward")
    assert t.seconds == pytest.approx(85e-6)
    assert t.overhead_s == pytest.approx(60e-6)  # 2 * 30 µs


def test_dtype_without_a_curve_uses_the_matrix_curve_and_default_overhead():
    # bf16 has no curve: `matrix` 0.5; no bf16 rate: the fp32 vector rate 1e11 -> 1e6 / 5e10 = 20 µs;
    # forward has no phase figure: op_overhead_s 10 µs -> 30 µs.
    t = op_time(DEVICE, EFF, 1e6, 0, 1, "matrix", "bf16", phase="forward")
    assert t.seconds == pytest.approx(30e-6)


def test_integer_vector_op_runs_at_the_fp32_vector_rate():
    # int64 has no catalog rate: fp32 1e11 * vector 0.1 = 1e10 FLOP/s -> 1e6 FLOPs take 100 µs, + 10 µs.
    t = op_time(DEVICE, EFF, 1e6, 0, 1, "vector", "int64")
    assert t.seconds == pytest.approx(110e-6)


def fake_measurements() -> Measurements:
    # dispatch 1 µs. fp32: 1e6 FLOPs in 11 µs -> 1e6 / 10 µs = 1e11; 1e9 in 5.001 ms -> 2e11 (the peak).
    # Copy: 1e4 bytes in 2 µs -> 1e4 / 1 µs = 1e10; 1e8 bytes in 5.001 ms -> 2e10 (the peak).
    m = Measurements(device="cpu", name="Fake CPU", threads=2, dispatch_s=1e-6)
    m.matmul = {"fp32": [Point(1e6, 11e-6), Point(1e9, 5.001e-3)], "bf16": [Point(1e6, 6e-6), Point(1e9, 2.501e-3)]}
    m.copy = [Point(1e4, 2e-6), Point(1e8, 5.001e-3)]
    m.vector_flops_s = 2e10
    m.first_touch_s_per_byte = 4e-10  # 64 MiB of fresh pages filled 26.8 ms slower than mapped ones
    m.parallel_op_s = [4.5e-6, 6.8e-6, 4.4e-6, 4.6e-6]  # the threads' probe before each of 3 sweeps and after
    return m


def test_overlay_from_measurements_holds_peaks_and_curves():
    data = build(fake_measurements(), {"forward": 20e-6, "backward": 25e-6, "optimizer": 3e-6})
    device, eff = models(data)
    assert device.id == "local-cpu" and device.kind == "cpu"
    assert device.matrix_flops.fp32 == pytest.approx(2e11)
    assert device.matrix_flops.bf16 == pytest.approx(4e11)  # 1e9 / 2.5 ms
    assert device.memory_bandwidth == pytest.approx(2e10)
    # fp32 efficiencies 1e11 / 2e11 = 0.5 and 1.0; the second step starts at sqrt(1e6 * 1e9) = 3.162e7.
    assert [(s.min_size, s.efficiency) for s in eff.matrix_by_dtype["fp32"]] == [(0, 0.5), (3.162e7, 1.0)]
    assert [s.efficiency for s in eff.memory] == [0.5, 1.0]  # 1e10 / 2e10
    assert eff.vector == pytest.approx(0.1)  # 2e10 / 2e11
    assert eff.phase_overhead_s["backward"] == pytest.approx(25e-6)
    assert device.source.startswith("measured by advisor calibrate on")
    assert eff.calibration_threads == 2  # Measurements(threads=2): validate times with the same
    assert eff.first_touch_bandwidth == pytest.approx(2.5e9)  # 1 / 4e-10 s per byte
    assert eff.parallel_op_s == pytest.approx([4.5e-6, 6.8e-6, 4.4e-6, 4.6e-6])  # kept as measured


def write_user_overlay(tmp_path) -> None:
    folder = tmp_path / "advisor" / "catalog"
    folder.mkdir(parents=True)
    data = build(fake_measurements(), {"forward": 20e-6, "backward": 25e-6, "optimizer": 3e-6})
    (folder / "local-cpu.yaml").write_text(yaml.safe_dump(data))


def test_user_folder_is_loaded_from_xdg_config_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert "local-cpu" not in load_catalog().devices
    write_user_overlay(tmp_path)
    assert user_dir() == tmp_path / "advisor" / "catalog"
    assert overlay_paths() == [user_dir()]
    assert overlay_paths(use_env=False) == []
    from advisor.catalog import load

    load._load_cached.cache_clear()
    assert load_catalog().devices["local-cpu"].memory_bandwidth == pytest.approx(2e10)


def test_calibrate_quick_writes_a_loadable_overlay_to_the_user_folder(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    result = run_cli("calibrate", "--quick", "--threads", "1", "--format", "json", env=env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    path = tmp_path / "advisor" / "catalog" / "local-cpu.yaml"
    assert out["written_to"] == str(path) and path.is_file()
    assert "matmul fp32" in result.stderr  # progress
    if platform.system() == "Linux":  # glibc maps a fresh 64 MiB tensor anew: first touch has a rate
        assert out["first_touch_bandwidth"] > 0 and "fresh pages" in result.stderr
    assert out["parallel_op_s"] is None  # one thread: no parallel region to time the threads' state with
    assert out["conv_channel_block"] in (1, 4, 8, 16, 32)  # read off its layers (overlay.channel_block)
    for small, large in (out["conv_reorder_rate"] or {}).values():  # NCHW less NHWC layers: positive rates
        assert small > 0 and large > 0
    # copies between layouts: --quick measures runs of 1, 16 and 256 floats, each at least a plain copy's time
    assert [p["run"] for p in out["permuted_copy"]] == [1, 16, 256]
    assert min(p["ratio"] for p in out["permuted_copy"]) >= 1.0
    # the optimizer's cold start after every other of the eight traffic sizes (0.8 MB .. 805 MB): four points; per MB
    # of its data only where the large optimizer came out slower cold than the small one (else nothing: None)
    assert len(out["optimizer_step_s"]) == 4 and min(out["optimizer_step_s"]) > 0
    assert out["optimizer_step_s_per_mb"] is None or out["optimizer_step_s_per_mb"] > 0
    assert "copy between layouts" in run_cli("calibrate", "--quick", "--threads", "1", env=env).stdout
    shown = run_cli("catalog", "show", "local-cpu", "--format", "json", env=env)
    assert shown.returncode == 0, shown.stderr
    assert run_cli("catalog", "validate", str(path), env=env).returncode == 0


def test_calibrate_bad_input(tmp_path):
    assert_user_error(run_cli("calibrate", "--device", "tpu"), "unknown --device 'tpu'")
    assert_user_error(run_cli("calibrate", "-o", str(tmp_path / "nope" / "x.yaml")), "nope")
    assert_user_error(run_cli("calibrate", "--attempts", "0"), "--attempts must be at least 1")
    assert_user_error(run_cli("calibrate", "--sweeps", "0"), "--sweeps must be at least 1")
    assert_user_error(run_cli("calibrate", "--spread", "-5"), "--spread must be between 0 and 3600 seconds")
    # --quick sweeps once: nothing to wait between, and the option is not silently dropped
    assert_user_error(run_cli("calibrate", "--quick", "--spread", "10"), "this run has one; add --sweeps 2")


def test_convolution_follows_its_intensity_curve():
    eff = Efficiency(
        **{
            **EFF.model_dump(),
            "conv_by_intensity": [{"min_size": 0, "efficiency": 0.1}, {"min_size": 10, "efficiency": 0.6}],
        }
    )
    # 1e6 FLOPs over 1e4 bytes: intensity 100 -> 0.6 -> 1e6 / (1e11 * 0.6) = 16.67 µs; memory
    # 1e4 / (1e10 * 0.5) = 2 µs; + 10 µs overhead = 26.67 µs. A GEMM of that size would take the fp32
    # curve's 0.8: 12.5 + 10 = 22.5 µs.
    assert op_time(DEVICE, eff, 1e6, 1e4, 1, "matrix", "fp32", op="aten.convolution").seconds == pytest.approx(
        26.667e-6, rel=1e-4
    )
    assert op_time(DEVICE, eff, 1e6, 1e4, 1, "matrix", "fp32", op="aten.mm").seconds == pytest.approx(22.5e-6)
    # depthwise-like: 1e6 FLOPs over 1e6 bytes: intensity 1 -> 0.1 -> 100 µs; memory 1e6 / 5e9 = 200 µs
    # wins: 200 + 10 = 210 µs.
    assert op_time(DEVICE, eff, 1e6, 1e6, 1, "matrix", "fp32", op="aten.convolution_backward").seconds == (
        pytest.approx(210e-6)
    )


def test_convolution_setup_is_fitted_from_two_batches_and_kept_out_of_the_curve():
    from advisor.calibration.overlay import conv_setup

    # three layers, each timed at batch 16 and batch 4 (a quarter of the FLOPs). Layer 1: 4e9 FLOPs in 1.1 ms,
    # 1e9 in 0.35 ms: the line through them, t = a + FLOPs x s, has s = 0.75 ms / 3e9 = 2.5e-13, a = 0.35 -
    # 0.25 = 0.1 ms. Layer 2: 8e8 in 0.26 ms, 2e8 in 0.14 ms -> a = (4 x 0.14 - 0.26) / 3 = 0.1 ms. Layer 3:
    # 4e8 in 0.2 ms, 1e8 in 0.11 ms -> a = (0.44 - 0.2) / 3 = 0.08 ms. Median 0.1 ms, less the 1 µs dispatch.
    full = [(4e9, 4e7, 1.1e-3), (8e8, 2e6, 0.26e-3), (4e8, 4e6, 0.2e-3)]
    small = [(1e9, 1e7, 0.35e-3), (2e8, 0.5e6, 0.14e-3), (1e8, 1e6, 0.11e-3)]
    assert conv_setup(full, small, 1e-6) == pytest.approx(99e-6)
    assert conv_setup(full, small[:2], 1e-6) == 0.0  # not in pairs: nothing fitted
    assert conv_setup(full, [], 1e-6) == 0.0  # a GPU: one batch only
    assert conv_setup([(4e9, 4e7, 1e-3)], [(1e9, 1e7, 0.2e-3)], 1e-6) == 0.0  # t4 x 4 < t16: no fixed part

    m = fake_measurements()
    m.conv, m.conv_small = full, small
    data = build(m, {"forward": 20e-6})
    _, eff = models(data)
    assert eff.op_setup_s == {"aten.convolution": pytest.approx(99e-6)}
    # the curve holds the rest: layer 1 (intensity 100) 4e9 / (1.1 ms - 1 µs - 99 µs) = 4e12 FLOP/s, 20x the 2e11
    # fp32 peak, held at the schema's ceiling of 2 (CONV_EFFICIENCY_MAX); layer 3 (intensity 100 too, so the two
    # share their mean) 4e8 / 0.1 ms = 4e12 -> 2; layer 2 (intensity 400) 8e8 / 0.16 ms = 5e12 -> 2
    assert [s.efficiency for s in eff.conv_by_intensity] == [2.0, 2.0]


def test_a_convolution_faster_than_the_best_gemm_keeps_its_rate():
    # oneDNN's direct 3x3 kernels beat torch.mm's best rate on the project's VM (1.1-1.4x at one thread): the curve
    # may pass 1, or every such layer would be priced at the GEMM's rate. fp32 peak 2e11, dispatch 1 µs, layers at
    # one batch (no fixed cost fitted). Forward: 2.6e8 FLOPs over 1e6 bytes (intensity 260) in 1.001 ms -> 2.6e11
    # FLOP/s, 1.3 of the peak; backward: 5.2e8 FLOPs over 2e6 bytes in 2.401 ms -> 2.1667e11, 1.0833
    m = fake_measurements()
    m.conv = [(2.6e8, 1e6, 1.001e-3)]
    m.conv_backward = [(5.2e8, 2e6, 2.401e-3)]
    _, eff = models(build(m, {"forward": 20e-6}))
    assert [s.efficiency for s in eff.conv_by_intensity] == [pytest.approx(1.3)]
    assert [s.efficiency for s in eff.conv_backward_by_intensity] == [pytest.approx(1.0833, abs=1e-4)]
    device = models(build(m, {"forward": 20e-6}))[0]
    # the estimate gives the layer its measured kernel time back: 2.6e8 / (2e11 x 1.3) = 1 ms (was 1.3 ms at 1.0)
    t = op_time(device, eff, 2.6e8, 1e6, 1, "matrix", "fp32", op="aten.convolution")
    assert t.compute_s == pytest.approx(1e-3)
    # a GEMM still reads the square-GEMM curve, at most 1.0 of the peak: 1e9 FLOPs take 5 ms
    assert op_time(device, eff, 1e9, 1e6, 1, "matrix", "fp32", op="aten.mm").compute_s == pytest.approx(5e-3)
    # a catalog curve above the ceiling is refused (a typo of 40 for 0.4), and a depthwise one above 1
    bad = {**eff.model_dump(), "conv_by_intensity": [{"min_size": 0, "efficiency": 40}]}
    with pytest.raises(ValueError, match="less than or equal to 2"):
        Efficiency(**bad)
    with pytest.raises(ValueError, match="less than or equal to 1"):
        Efficiency(**{**eff.model_dump(), "depthwise_by_intensity": [{"min_size": 0, "efficiency": 1.3}]})


def test_convolution_layers_are_priced_as_they_run_in_turn():
    from advisor.calibration.kernels import in_turn
    from advisor.calibration.overlay import conv_setup, in_turn_note

    alone = [(1e8, 1e6, 1e-3), (2e8, 2e6, 3e-3)]  # 4 ms of calls, each layer timed again and again
    # one call of each in turn took 4.4 ms: 4.4 / 4 = 1.1, every layer 10 % longer (1.1 and 3.3 ms)
    [scaled], factor = in_turn([alone], 4.4e-3)
    assert factor == pytest.approx(1.1)
    assert [t for *_, t in scaled] == [pytest.approx(1.1e-3), pytest.approx(3.3e-3)]
    assert [p[:2] for p in scaled] == [p[:2] for p in alone]  # FLOPs and bytes as counted
    # faster in turn than alone (3.9 / 4): noise, the times stay; twice as long (8 / 4): a disturbed round, the same
    assert in_turn([alone], 3.9e-3) == ([alone], 1.0)
    assert in_turn([alone], 8e-3) == ([alone], 1.0)
    # the same layers at a quarter of the batch, each 100 µs of fixed cost + a quarter of the rest: 0.325 and
    # 0.825 ms (the line through (1e8, 1 ms) and (2.5e7, 0.325 ms) meets 0 FLOPs at 100 µs). In turn the full
    # batch took 4.04 ms (x1.01), the quarter 1.38 ms (x1.2): 5.42 ms for 5.15 ms alone, one factor 1.0524...
    quarter = [(2.5e7, 2.5e5, 0.325e-3), (5e7, 5e5, 0.825e-3)]
    (full_s, quarter_s), factor = in_turn([alone, quarter], 5.42e-3)
    assert factor == pytest.approx(5.42 / 5.15)
    assert [t for *_, t in quarter_s] == [pytest.approx(0.325e-3 * 5.42 / 5.15), pytest.approx(0.825e-3 * 5.42 / 5.15)]
    # ... so the fixed cost read between the batches is scaled as the rate is: 100 µs x 1.0524 = 105.2 µs. Each
    # batch scaled by its own factor would give (4 x 0.39 - 1.01) / 3 = 183.3 µs for the first layer: the quarter
    # batch's 20 % read as fixed cost
    assert conv_setup(full_s, quarter_s, 0.0) == pytest.approx(100e-6 * 5.42 / 5.15)
    apart = [(f, b, t * 1.2) for f, b, t in quarter]
    assert conv_setup([(f, b, t * 1.01) for f, b, t in alone][:1], apart[:1], 0.0) == pytest.approx(183.3e-6, rel=1e-3)
    # the efficiency note names each set's factors
    note = in_turn_note({"conv": {"forward": 1.06, "backward": 1.052}, "depthwise": {}})
    assert note == "; convolution layers timed in turn, not each alone (conv backward x1.05, conv forward x1.06)"
    assert in_turn_note({}) == ""


def test_a_cpu_calibration_times_its_convolution_layers_in_turn():
    from advisor.calibration.bench import Clock
    from advisor.calibration.kernels import conv_points

    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    fwd, bwd, fwd_small, bwd_small, _, _, factors = conv_points("cpu", Clock("cpu", 0.002, 2, 1), quick=True)
    # --quick measures three dense layers at batch 16 and 4: both batches of a direction share one factor, >= 1
    assert sorted(factors) == ["backward", "forward"]
    assert all(1.0 <= f < 2.0 for f in factors.values())
    assert len(fwd) == len(bwd) == len(fwd_small) == len(bwd_small) == 3
    # the first two, 1x1 layers of 32 channels at 32x32 and 512 at 8x8, would run their quarter batch (4) on
    # PyTorch's native kernel at one thread: they are timed at 16 again (the same FLOPs: conv_setup leaves the pairs
    # out); the 3x3 stem layer runs oneDNN at 4: a quarter of the FLOPs
    assert [s[0] / f[0] for s, f in zip(fwd_small, fwd, strict=True)] == pytest.approx([1.0, 1.0, 0.25])
    assert [s[0] / f[0] for s, f in zip(bwd_small, bwd, strict=True)] == pytest.approx([1.0, 1.0, 0.25])
    torch.set_num_threads(2)
    try:
        fwd, _, fwd_small, *_ = conv_points("cpu", Clock("cpu", 0.002, 2, 1), quick=True)
    finally:
        torch.set_num_threads(1)
    # at two threads PyTorch runs every one on oneDNN: all quarters
    assert [s[0] / f[0] for s, f in zip(fwd_small, fwd, strict=True)] == pytest.approx([0.25] * 3)


def test_depthwise_layers_get_curves_of_their_own_that_may_fall():
    m = fake_measurements()  # fp32 peak 2e11, dispatch 1 µs
    # two 3x3 depthwise layers at 2.24 and 2.25 FLOPs per byte: 2.24e6 FLOPs in 113 µs (112 µs less the dispatch
    # -> 2e10 FLOP/s, 0.1 of the peak) and 2.25e6 in 57.25 µs (4e10, 0.2); a 7x7 one at 12: 1.2e7 in 1.201 ms
    # (1e10, 0.05). Measured at one batch, so no fixed cost is taken off.
    m.depthwise = [(2.24e6, 1e6, 113e-6), (2.25e6, 1e6, 57.25e-6), (1.2e7, 1e6, 1.201e-3)]
    m.depthwise_backward = [(2.25e6, 1e6, 113.5e-6), (1.2e7, 1e6, 1.201e-3)]  # 0.1 and 0.05
    _, eff = models(build(m, {"forward": 20e-6}))
    # the two 3x3 layers pooled (within 1.25x of each other): mean 0.15 at sqrt(2.24 x 2.25) = 2.245; the 7x7's
    # 0.05 stands from sqrt(2.245 x 12) = 5.19, not pooled upwards as the dense curve would be
    assert [(s.min_size, s.efficiency) for s in eff.depthwise_by_intensity] == [(0, 0.15), (5.19, 0.05)]
    # backward: 0.1 at 2.25, 0.05 from sqrt(2.25 x 12) = 5.196
    assert [(s.min_size, s.efficiency) for s in eff.depthwise_backward_by_intensity] == [(0, 0.1), (5.196, 0.05)]
    assert eff.conv_by_intensity is None  # no dense layers measured


def test_transposed_layers_get_curves_of_their_own():
    m = fake_measurements()  # fp32 peak 2e11, dispatch 1 µs
    # plain layers at two batches: fixed cost 99 µs a call (as in the test above)
    m.conv = [(4e9, 4e7, 1.1e-3), (8e8, 2e6, 0.26e-3), (4e8, 4e6, 0.2e-3)]
    m.conv_small = [(1e9, 1e7, 0.35e-3), (2e8, 5e5, 0.14e-3), (1e8, 1e6, 0.11e-3)]
    # transposed layers at one batch: 2e8 FLOPs at 20 FLOPs a byte in 10.1 ms (less the dispatch and the 99 µs:
    # 10 ms -> 2e10 FLOP/s, 0.1 of the peak); 8e8 at 80 in 20.1 ms (4e10, 0.2)
    m.transposed = [(2e8, 1e7, 10.1e-3), (8e8, 1e7, 20.1e-3)]
    m.transposed_backward = [(4e8, 2e7, 10.001e-3)]  # no backward setup measured: 4e8 / 10 ms = 4e10 -> 0.2
    _, eff = models(build(m, {"forward": 20e-6}))
    assert eff.op_setup_s == {"aten.convolution": pytest.approx(99e-6)}  # from the plain layers alone
    # 0.1 at 20, 0.2 from sqrt(20 x 80) = 40; backward 0.2 flat
    assert [(s.min_size, s.efficiency) for s in eff.transposed_by_intensity] == [(0, 0.1), (40, 0.2)]
    assert [(s.min_size, s.efficiency) for s in eff.transposed_backward_by_intensity] == [(0, 0.2)]
    assert [s.efficiency for s in eff.conv_by_intensity] == [2.0, 2.0]  # the plain curve as without them


def test_convolution_setup_adds_to_every_call():
    eff = Efficiency(**{**EFF.model_dump(), "min_op_s": {"aten.convolution": 50e-6}})
    eff = eff.model_copy(update={"op_setup_s": {"aten.convolution": 40e-6}})
    # a tiny convolution: 2e3 FLOPs (20 ns) held at the 50 µs floor, + 40 µs setup, + 10 µs overhead: 2 calls
    # = 2 x 100 µs
    assert op_time(DEVICE, eff, 4e3, 0, 2, "matrix", "fp32", op="aten.convolution").seconds == pytest.approx(200e-6)
    # a large one: 1e9 FLOPs at the fp32 curve's 0.8 of 1e11 = 12.5 ms, + 40 µs + 10 µs
    assert op_time(DEVICE, eff, 1e9, 0, 1, "matrix", "fp32", op="aten.convolution").seconds == pytest.approx(12.55e-3)
    # other ops pay none: a 1e9-FLOP GEMM, 12.5 ms + 10 µs
    assert op_time(DEVICE, eff, 1e9, 0, 1, "matrix", "fp32", op="aten.mm").seconds == pytest.approx(12.51e-3)


def test_named_op_efficiency_overrides_the_curves():
    eff = Efficiency(**{**EFF.model_dump(), "op_efficiency": {"aten.exp": 0.01}})
    # exp: 1e6 FLOPs at 1e11 * 0.01 = 1e9 FLOP/s -> 1 ms; memory 8e6 / 5e9 = 1.6 ms wins; + 10 µs.
    assert op_time(DEVICE, eff, 1e6, 8e6, 1, "vector", "fp32", op="aten.exp").seconds == pytest.approx(1.61e-3)
    # 1e6 bytes: memory 0.2 ms, compute 1 ms wins -> 1.01 ms; another op keeps vector 0.1: 0.2 ms + 10 µs.
    assert op_time(DEVICE, eff, 1e6, 1e6, 1, "vector", "fp32", op="aten.exp").seconds == pytest.approx(1.01e-3)
    assert op_time(DEVICE, eff, 1e6, 1e6, 1, "vector", "fp32", op="aten.add").seconds == pytest.approx(0.21e-3)


def test_gpu_overlay_is_named_after_the_gpu(monkeypatch):
    from advisor.calibration import overlay

    monkeypatch.setattr(overlay, "_gpu_memory_bytes", lambda: 141e9)
    monkeypatch.setattr("advisor.profiler.device.nvml_info", lambda: None)
    m = fake_measurements()
    m.device, m.name = "cuda", "NVIDIA H200"
    device, eff = models(build(m, {"forward": 8e-6}))
    assert device.id == "local-nvidia-h200" and device.kind == "gpu"
    assert device.memory_bytes == 141e9
    assert eff.calibration_threads is None  # threads matter on a CPU only
    assert device.notes.endswith("NVML was not available.")
    # the H200's library rules (misaligned GEMMs, NCHW transposes, waves) come from its catalog family
    assert eff.kernel_rules == "nvidia-hopper"


def test_gpu_overlay_is_asynchronous_and_takes_bandwidth_beyond_the_cache(monkeypatch):
    from advisor.calibration import overlay

    monkeypatch.setattr(overlay, "_gpu_memory_bytes", lambda: 141e9)
    monkeypatch.setattr("advisor.profiler.device.nvml_info", lambda: None)
    m = fake_measurements()
    m.device, m.name = "cuda", "NVIDIA H200"
    # 1e7 bytes from the L2 in 1.001 ms -> 1e7 / 1 ms = 1e10, faster than 3e8 bytes from HBM in 60.001 ms -> 5e9:
    # a GPU's bandwidth is the largest call's, the L2 call's efficiency is capped at 1
    m.copy = [Point(1e7, 1.001e-3), Point(3e8, 60.001e-3)]
    m.launch_s, m.host_op_s = 2.5e-6, 9e-6
    device, eff = models(build(m, {"forward": 20e-6, "backward": 25e-6}))
    assert device.memory_bandwidth == pytest.approx(5e9)
    assert [s.efficiency for s in eff.memory] == [1.0, 1.0]
    # the host issues ops at 9 µs each while kernels run; a kernel adds the 2.5 µs launch gap, not a CPU's cost
    assert eff.host_op_s == pytest.approx(9e-6) and eff.launch_s == pytest.approx(2.5e-6)
    assert eff.op_overhead_s == pytest.approx(2.5e-6) and eff.phase_overhead_s == {}
    # the fitted per-op costs are the host's, by phase
    assert eff.host_phase_s == {"forward": pytest.approx(20e-6), "backward": pytest.approx(25e-6)}


def test_host_per_op_is_the_tiny_nets_unexplained_time_over_their_ops():
    from advisor.calibration.fit import host_per_op

    def net(f, b, o):  # (ops, rest_s) per phase
        return {"forward": {"ops": f[0], "rest_s": f[1]}, "backward": {"ops": b[0], "rest_s": b[1]},
                "optimizer": {"ops": o[0], "rest_s": o[1]}}  # fmt: skip

    # (100 x 10 µs + 200 x 12 µs + 50 x 4 µs) + (20 x 10 µs + 40 x 15 µs + 10 x 4 µs) = 3.6 ms + 0.84 ms
    # over 350 + 70 = 420 ops: 10.57 µs per op
    seen = [net((100, 1e-3), (200, 2.4e-3), (50, 0.2e-3)), net((20, 0.2e-3), (40, 0.6e-3), (10, 0.04e-3))]
    assert host_per_op(seen, 5e-6) == pytest.approx(4.44e-3 / 420)
    assert host_per_op(seen, 20e-6) == 20e-6  # never below one dispatch


def test_calibrated_gpu_takes_its_familys_kernel_rules_unless_it_sets_them(tmp_path):
    from advisor.catalog.load import load_catalog
    from advisor.errors import UserError

    overlay = {
        "efficiency": [
            {"id": "mine", "note": "a test profile", "device_link": 0.7, "network": 0.6, "collective_latency_s": "50us",
             "matrix": [{"min_size": 0, "efficiency": 0.5}], "vector": 0.5,
             "memory": [{"min_size": 0, "efficiency": 0.9}], "op_overhead_s": "2us", "kernel_rules": "nvidia-hopper",
             "gemm_tile": [64, 64]},
        ]
    }  # fmt: skip
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(overlay))
    cat = load_catalog([path], use_env=False)
    mine, hopper = cat.efficiency["mine"], cat.efficiency["nvidia-hopper"]
    assert mine.tensor_core_channels == hopper.tensor_core_channels == 8  # taken: the catalog's figure
    assert mine.nchw_transpose == hopper.nchw_transpose
    assert mine.unaligned_gemm_flops_per_clock == hopper.unaligned_gemm_flops_per_clock
    assert mine.gemm_tile == [64, 64] and hopper.gemm_tile != [64, 64]  # its own stays
    assert mine.matrix[0].efficiency == 0.5  # rates and curves are never taken
    overlay["efficiency"][0]["kernel_rules"] = "nvidia-hoper"
    typo = tmp_path / "typo.yaml"
    typo.write_text(yaml.safe_dump(overlay))
    with pytest.raises(UserError, match="kernel_rules: unknown efficiency profile 'nvidia-hoper'"):
        load_catalog([typo], use_env=False)


def test_calibrate_on_two_threads_times_the_threads_state_around_its_sweep(tmp_path):
    out_path = tmp_path / "two.yaml"
    result = run_cli("calibrate", "--quick", "--threads", "2", "-o", str(out_path), "--format", "json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    # --quick runs one sweep: one probe before it and one after; an add on 40,000 floats takes microseconds
    assert out["threads"] == 2 and len(out["parallel_op_s"]) == 2
    assert all(0 < t < 1e-3 for t in out["parallel_op_s"])
    assert len(yaml.safe_load(out_path.read_text())["efficiency"][0]["parallel_op_s"]) == 2


def minor_faults(fn) -> int:
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    fn()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc")
def test_kernels_are_timed_on_a_held_heap_and_glibc_thresholds_come_back():
    """8 MiB of fp32 (2,097,152 elements) is 2,048 pages of 4 KiB. Held, the blocks freed stay in the heap: once
    a few dozen fills have grown it (a small allocation can split a freed block, so the next one lands higher up
    at first: in a pytest process here the heap grew for eight fills, 64 MiB, then held), nine more mostly find
    room in what it holds: 0, 2,048 or 4,096 fresh pages in repeated runs here (pytest's own allocations still
    split a block now and then); fewer than half of the nine blocks' 18,432 asserted.
    Afterwards the thresholds are glibc's 128 KiB again: a 128 MiB block (32,768 pages, larger than anything the
    held heap kept after its trim) is mapped on its own and unmapped when freed, so two fills fault 65,536 pages
    in (at least 90 % of that asserted); with the heap still held the second would reuse the first: 32,768."""
    import torch

    from advisor.calibration.bench import held_heap

    def nine_fills():
        for _ in range(9):
            torch.empty(2 << 20).fill_(1.0)

    def two_large_fills():
        for _ in range(2):
            torch.empty(32 << 20).fill_(1.0)

    with held_heap("cpu") as held:
        assert held
        for _ in range(4):
            nine_fills()  # the heap grows to what the fills need
        inside = minor_faults(nine_fills)
    after = minor_faults(two_large_fills)
    assert inside < 9 * 2048 / 2
    assert after >= 0.9 * 2 * 32768
    with held_heap("cuda") as held:  # a GPU's kernels: nothing held
        assert not held


def test_the_calibration_measures_layout_reorders_and_fits_the_conv_curves_without_them(tmp_path):
    m = fake_measurements()  # bandwidth 2e10, fp32 peak 2e11, dispatch 1 µs
    m.blocks = [(c, c, 1e-6 * (-(-c // 16) * 16) ** 2) for c in (20, 24, 32, 40, 48)]  # oneDNN's blocks of 16
    # kernels.reorder_points, (channels, elements, seconds of both passes): 64 channels, 1e5 and 1e6 elements: a pass
    # moves 4 x 1e5 x (64 + 64) / 64 = 8e5 B (and 8e6), two in 0.26 ms (1.7 ms): the line through them has 0.1 ms
    # at no bytes (the passes' fixed cost, left to the layers' fixed cost) and 2e-10 s a byte, 1e10 B/s for both
    # passes' 1.6e6 (1.6e7) B: 0.5 of 2e10 at both sizes. 58 channels, 950,272 elements alone: a pass
    # 4 x 950,272 x 122 / 58 = 7,995,392 B, two in 3.1981568 ms -> 5e9 B/s, 0.25. A layer no slower on NCHW input
    # than on NHWC (noise) says nothing.
    m.reorder = [(64, 1e6, 1.7e-3), (64, 1e5, 0.26e-3), (58, 950_272, 3.1981568e-3), (64, 1e4, -1e-6)]
    # one dense 3x3 layer, 32 channels in and out at 32x32, batch 16: x = y = 524,288 elements, a pass 4,194,304 B
    # each way at 0.5 of 2e10: 0.4194 ms, both 0.83886 ms. 1.6e8 FLOPs in 1.83986 ms = 1 µs dispatch + the reorders
    # + 1 ms of kernel: 1.6e11 FLOP/s, 0.8 of the peak
    m.conv = [(1.6e8, 1e6, 1.83986e-3)]
    m.conv_geometry = {"conv": [(32, 32, 524_288, 524_288, 1)], "conv_backward": [], "depthwise": [],
                       "depthwise_backward": []}  # fmt: skip
    data = build(m, {"forward": 20e-6})
    _, eff = models(data)
    assert eff.conv_channel_block == 16
    # what `advisor calibrate` shows: a pass's rate at the smallest and largest size, 0.5 and 0.25 of 2e10 B/s
    from advisor.cli.calibrate import summary

    rates = summary(data, tmp_path / "x.yaml", 1.0)["conv_reorder_rate"]
    assert rates == {"aligned": [pytest.approx(1e10)] * 2, "padded": [pytest.approx(5e9)] * 2}
    assert {k: [(s.min_size, s.efficiency) for s in v] for k, v in eff.conv_reorder.items()} == {
        "aligned": [(0, 0.5), (2.53e6, 0.5)],  # the second from sqrt(8e5 x 8e6)
        "padded": [(0, 0.25)],
    }
    assert [s.efficiency for s in eff.conv_by_intensity] == [pytest.approx(0.8, abs=1e-3)]
    # without the layers' geometry the curve keeps the reorders (1.6e8 / 1.83886 ms = 8.70e10: 0.435) and the
    # overlay leaves them out, so that an estimate does not count them twice
    m.conv_geometry = {}
    _, eff = models(build(m, {"forward": 20e-6}))
    assert eff.conv_reorder == {}
    assert [s.efficiency for s in eff.conv_by_intensity] == [pytest.approx(0.435, abs=1e-3)]


@pytest.mark.parametrize("threads", [1, 2])
def test_clock_reports_the_median_round_at_every_thread_count(threads):
    from advisor.calibration.bench import Clock

    # a scripted clock: the sizing round takes 0.3 s for one call (past min_s, so n = 1), the two more rounds 0.1 s
    # and 0.2 s: rounds [0.3, 0.1, 0.2], median 0.2 s (the fastest, 0.1 s, is what two threads reported until
    # 2026-12-07); the spread kept is slowest / fastest = 3
    ticks = iter([0.0, 0.3, 1.0, 1.1, 2.0, 2.2])
    clock = Clock("cpu", min_s=0.05, repeats=3, threads=threads)
    clock.now = lambda: next(ticks)
    assert clock(lambda: None, "scripted") == pytest.approx(0.2)
    assert clock.spreads == [("scripted", pytest.approx(3.0))]
