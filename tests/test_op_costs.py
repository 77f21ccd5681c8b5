"""The op costs behind issue 10: GEMM shape caps, measured op curves, library floors, reuse distance, the GPU
kernel adjustments (tensor cores, NCHW transposes, wave quantization), fused recurrent layers, the host's
issue rate and per-module overhead. Every expected value is derived by hand in the comment beside it."""

from __future__ import annotations

import pytest
from conftest import ROOT

from advisor.catalog.schema import Device, Efficiency
from advisor.estimator import kernels
from advisor.estimator.fused import recurrent_modules, replaced_modules, rnn_times
from advisor.estimator.roofline import host_bound, op_time, profile_op_time, step_overhead
from advisor.profiler.schema import Linear, OpRecord, RnnCall

CPU = Device(
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
FLAT = [{"min_size": 0, "efficiency": 0.5}]
EFF = Efficiency(
    id="toy",
    note="hand-made for tests",
    matrix=FLAT,
    vector=0.1,
    memory=FLAT,
    op_overhead_s=10e-6,
    device_link=0.5,
    network=0.5,
    collective_latency_s=1e-5,
)


def with_(**fields) -> Efficiency:
    return Efficiency(**{**EFF.model_dump(), **fields})


def record(op="aten.mm", phase="forward", category="matrix", flops=0.0, nbytes=0.0, count=1, shapes="", **kw):
    return OpRecord(
        op=op,
        phase=phase,
        category=category,
        dtype=kw.pop("dtype", "fp32"),
        module=kw.pop("module", "layer"),
        count=count,
        flops=Linear(per_sample=flops),
        bytes_read=Linear(per_sample=nbytes),
        bytes_written=Linear(),
        shapes=shapes,
        **kw,
    )


# 0.1 up to intensity 6, 1.0 from 10 on (Efficiency.at joins the points as power laws)
CAP = [{"min_size": 0, "efficiency": 0.1}, {"min_size": 6, "efficiency": 0.1}, {"min_size": 10, "efficiency": 1.0}]


def test_skinny_gemm_is_capped_by_its_intensity():
    eff = with_(matmul_by_intensity=CAP)
    # 1e6 FLOPs over 2e5 bytes: intensity 5 < 10 -> cap 0.1 (size curve 0.5): 1e6 / (1e11 * 0.1) = 100 µs;
    # memory 2e5 / (1e10 * 0.5) = 40 µs; + 10 µs overhead = 110 µs
    assert op_time(CPU, eff, 1e6, 2e5, 1, "matrix", "fp32", op="aten.mm").seconds == pytest.approx(110e-6)
    # 1e6 FLOPs over 1e4 bytes: intensity 100 -> cap 1.0, the size curve's 0.5 binds: 20 µs + 10 µs
    assert op_time(CPU, eff, 1e6, 1e4, 1, "matrix", "fp32", op="aten.mm").seconds == pytest.approx(30e-6)


def table_and_scalar(prof, eff, batch=3):
    """(the op table's seconds per record at micro-batch `batch`, profile_op_time's for the same records; 0 for
    the optimizer's state creation, which the table leaves out) on the CPU fixture in fp32, plus the table."""
    import numpy as np

    from advisor.estimator.parallel.tensor import roles
    from advisor.estimator.passes import op_table, record_times
    from advisor.estimator.roofline import STATE_INIT

    table = op_table(prof, roles(prof, prof.structure), CPU, eff, "fp32")
    got = record_times(table, [batch], [1], [1], [False])["seconds"][0]
    stepped = recurrent_modules(prof, eff)
    want = [
        0.0
        if o.phase == "optimizer" and o.op in STATE_INIT
        else profile_op_time(
            o, CPU, eff, prof.precision, "fp32", batch, prof.bytes(batch), prof.batch_size, o.module in stepped
        ).seconds
        for o in prof.ops
    ]
    return got, np.asarray(want), table


def test_a_linear_layers_three_gemms_are_told_apart():
    # nn.Linear(512, 1024) at 64 rows: forward addmm(b, x, Wᵀ), input gradient g·W, weight gradient gᵀ·x
    fwd = record("aten.addmm", shapes="[1024], [64, 512], [512, 1024]")
    assert kernels.gemm_layout(fwd) == "forward"
    assert kernels.gemm_layout(record(phase="backward", shapes="[64, 1024], [1024, 512]")) == "input_grad"
    # gᵀ·x reduces over the 64 rows, fewer than its 1024 x 512 output
    assert kernels.gemm_layout(record(phase="backward", shapes="[1024, 64], [64, 512]")) == "weight_grad"
    assert kernels.gemm_layout(record("aten.bmm", shapes="[8, 64, 64], [8, 64, 64]")) is None
    assert kernels.gemm_layout(record(shapes="")) is None


def test_a_gemm_is_capped_by_its_layouts_curve():
    # the forward layout measured at half the mean's cap: 0.05 up to intensity 6
    slow = [{"min_size": 0, "efficiency": 0.05}, {"min_size": 6, "efficiency": 0.05}]
    slow.append({"min_size": 10, "efficiency": 1.0})
    eff = with_(matmul_by_intensity=CAP, matmul_by_layout={"forward": slow})
    # 1e6 FLOPs over 2e5 bytes, intensity 5: the forward cap 0.05 -> 1e6 / (1e11 * 0.05) = 200 µs, + 10 µs
    fwd = record(flops=1e6, nbytes=2e5, shapes="[4, 1000], [1000, 1000]")
    assert profile_op_time(fwd, CPU, eff, "fp32", "fp32", 1).seconds == pytest.approx(210e-6)
    # the input gradient has no curve of its own: the mean's 0.1 -> 100 µs + 10 µs
    grad = record(phase="backward", flops=1e6, nbytes=2e5, shapes="[4, 1000], [1000, 1000]")
    assert profile_op_time(grad, CPU, eff, "fp32", "fp32", 1).seconds == pytest.approx(110e-6)


def test_the_op_table_reads_each_gemms_layout_curve():
    """passes.py agrees with profile_op_time on every record of the shipped LSTM under per-layout caps (each
    layout a different cap, so a mix-up shows)."""
    from advisor import api

    prof = api.profile_from("lstm")
    caps = {
        name: [{"min_size": 0, "efficiency": e}, {"min_size": 1e4, "efficiency": 1.0}]
        for name, e in (("forward", 0.05), ("input_grad", 0.2), ("weight_grad", 0.4))
    }
    eff = with_(matmul_by_intensity=CAP, matmul_by_layout=caps)
    seen = {kernels.gemm_layout(o) for o in prof.ops}
    assert {"forward", "input_grad", "weight_grad"} <= seen
    got, want, _ = table_and_scalar(prof, eff)
    assert got == pytest.approx(want, rel=1e-12)


def test_a_depthwise_convolution_reads_its_own_curves():
    flat = [{"min_size": 0, "efficiency": 0.5}]
    eff = with_(
        conv_by_intensity=flat,
        conv_backward_by_intensity=flat,
        depthwise_by_intensity=[{"min_size": 0, "efficiency": 0.2}],
        depthwise_backward_by_intensity=[{"min_size": 0, "efficiency": 0.1}],
    )
    depthwise = record("aten.convolution", flops=2e6, nbytes=1e5, shapes="[8, 32, 16, 16], [32, 1, 7, 7]")
    dense = record("aten.convolution", flops=2e6, nbytes=1e5, shapes="[8, 32, 16, 16], [32, 32, 3, 3]")
    grouped = record("aten.convolution", shapes="[8, 64, 56, 56], [64, 2, 3, 3]")  # 32 groups of 2 channels
    back = record(
        "aten.convolution_backward",
        "backward",
        flops=2e6,
        nbytes=1e5,
        shapes="[8, 32, 16, 16], [8, 32, 16, 16], [32, 1, 7, 7]",
    )
    assert [kernels.kernel_variant(o, eff) for o in (depthwise, dense, grouped, back)] == [
        "depthwise",
        None,
        None,
        "depthwise",
    ]
    # a single channel is not depthwise; a family without depthwise curves reads the conv curves for all
    assert kernels.kernel_variant(record("aten.convolution", shapes="[8, 1, 16, 16], [4, 1, 3, 3]"), eff) is None
    assert kernels.kernel_variant(depthwise, with_(conv_by_intensity=flat)) is None

    def seconds(o, e=eff):
        return profile_op_time(o, CPU, e, "fp32", "fp32", 1).seconds

    # 2e6 FLOPs over 1e5 bytes (memory 1e5 / (1e10 * 0.5) = 20 µs, never the bound), + 10 µs overhead:
    # depthwise forward at 0.2: 2e6 / (1e11 * 0.2) = 100 µs; backward at 0.1: 200 µs; dense at 0.5: 40 µs
    assert seconds(depthwise) == pytest.approx(110e-6)
    assert seconds(back) == pytest.approx(210e-6)
    assert seconds(dense) == pytest.approx(50e-6)
    # no backward curve of its own: the dense backward curve's 0.5, as before there were depthwise curves
    assert seconds(back, with_(**{**eff.model_dump(), "depthwise_backward_by_intensity": None})) == pytest.approx(50e-6)


def test_a_transposed_convolution_reads_its_own_curves():
    flat = [{"min_size": 0, "efficiency": 0.5}]
    eff = with_(
        conv_by_intensity=flat,
        conv_backward_by_intensity=flat,
        transposed_by_intensity=[{"min_size": 0, "efficiency": 0.125}],
        transposed_backward_by_intensity=[{"min_size": 0, "efficiency": 0.25}],
    )
    shapes = "[8, 128, 16, 16], [128, 64, 2, 2], [64]"
    up = record("aten.convolution", flops=2e6, nbytes=1e5, shapes=shapes, transposed=True)
    plain = record("aten.convolution", flops=2e6, nbytes=1e5, shapes=shapes)
    back = record(
        "aten.convolution_backward",
        "backward",
        flops=2e6,
        nbytes=1e5,
        shapes="[8, 64, 32, 32], [8, 128, 16, 16], [128, 64, 2, 2]",
        transposed=True,
    )
    assert [kernels.kernel_variant(o, eff) for o in (up, plain, back)] == ["transposed", None, "transposed"]
    assert kernels.kernel_variant(up, with_(conv_by_intensity=flat)) is None  # no transposed curves: the conv ones

    def seconds(o, e=eff):
        return profile_op_time(o, CPU, e, "fp32", "fp32", 1).seconds

    # 2e6 FLOPs (memory 1e5 / (1e10 * 0.5) = 20 µs, never the bound) + 10 µs overhead: transposed forward at 0.125
    # 2e6 / (1e11 * 0.125) = 160 µs; its backward at 0.25: 80 µs; the same shapes not transposed at 0.5: 40 µs
    assert seconds(up) == pytest.approx(170e-6)
    assert seconds(back) == pytest.approx(90e-6)
    assert seconds(plain) == pytest.approx(50e-6)
    assert seconds(back, with_(**{**eff.model_dump(), "transposed_backward_by_intensity": None})) == pytest.approx(
        50e-6
    )


def test_the_op_table_reads_the_depthwise_curves():
    """passes.py agrees with profile_op_time on every record of the shipped MobileNetV2 (depthwise 3x3 layers and
    dense ones) with depthwise curves unlike the dense ones."""
    from advisor import api

    prof = api.profile_from("mobilenet_v2")
    eff = with_(
        conv_by_intensity=[{"min_size": 0, "efficiency": 0.5}],
        conv_backward_by_intensity=[{"min_size": 0, "efficiency": 0.4}],
        depthwise_by_intensity=[{"min_size": 0, "efficiency": 0.05}, {"min_size": 4, "efficiency": 0.3}],
        depthwise_backward_by_intensity=[{"min_size": 0, "efficiency": 0.02}],
    )
    assert {kernels.kernel_variant(o, eff) for o in prof.ops if o.op.startswith("aten.convolution")} == {
        None, "depthwise"
    }  # fmt: skip
    got, want, _ = table_and_scalar(prof, eff)
    assert got == pytest.approx(want, rel=1e-12)
    plain, _, _ = table_and_scalar(prof, with_(**{**eff.model_dump(), "depthwise_backward_by_intensity": None}))
    assert got.sum() > plain.sum() * 1.05  # the depthwise backward curve (0.02 against 0.4) is read


def test_curves_join_their_points_as_power_laws():
    """Efficiency.at and the op table's vectorized lookup: the figure at each point, straight lines on log-log axes
    between them, flat outside; the min_size 0 point stands one decade below the next. Every catalog curve then
    prices more work at no less time."""
    import numpy as np

    from advisor import api
    from advisor.estimator.passes import _at, _curve

    curve = Efficiency.model_validate({**EFF.model_dump(), "matrix": [
        {"min_size": 0, "efficiency": 0.1}, {"min_size": 1e9, "efficiency": 0.4}, {"min_size": 1e10, "efficiency": 0.8},
    ]}).matrix  # fmt: skip
    # the first point at 1e8: 0.1 there and below; 3.16e8 is half a decade up to 1e9: 0.1 x 4^0.5 = 0.2;
    # 3.16e9 half a decade between 0.4 and 0.8: 0.4 x 2^0.5 = 0.5657; 0.8 past 1e10
    sizes = [5e7, 1e8, 10**8.5, 1e9, 10**9.5, 1e10, 1e12]
    want = [0.1, 0.1, 0.2, 0.4, 0.4 * 2**0.5, 0.8, 0.8]
    assert [Efficiency.at(curve, x) for x in sizes] == pytest.approx(want)
    assert _at(_curve(curve), np.array(sizes)) == pytest.approx(want)
    grid = np.logspace(0, 14, 300)
    for eff in api.catalog().efficiency.values():
        for steps in (eff.matrix, eff.memory, *eff.matrix_by_dtype.values(), *eff.op_curves.values()):
            seconds = grid / _at(_curve(steps), grid)
            assert (np.diff(seconds) >= -1e-12 * seconds[1:]).all(), eff.id


def test_measured_op_curve_is_its_own_roofline_over_the_efficiency_at_its_size():
    eff = with_(op_curves={"aten.native_batch_norm": [{"min_size": 0, "efficiency": 0.2}]})
    # 1e5 FLOPs, 4e6 bytes: max(1e5 / 1e11, 4e6 / 1e10) = 400 µs at the peaks, / 0.2 = 2 ms, + 10 µs
    t = op_time(CPU, eff, 1e5, 4e6, 1, "vector", "fp32", op="aten.native_batch_norm")
    assert t.seconds == pytest.approx(2.01e-3)


def test_library_floor_and_fixed_cost_replacement():
    eff = with_(min_op_s={"aten.convolution": 50e-6})
    # a tiny convolution: 1e3 FLOPs would take 20 ns; the floor says 50 µs per call; 2 calls + 2 x 10 µs
    assert op_time(CPU, eff, 2e3, 0, 2, "matrix", "fp32", op="aten.convolution").seconds == pytest.approx(120e-6)
    # fixed_s replaces the per-op overhead: 2 x 50 µs + 3 µs
    t = op_time(CPU, eff, 2e3, 0, 2, "matrix", "fp32", op="aten.convolution", fixed_s=3e-6)
    assert t.seconds == pytest.approx(103e-6)


def test_optimizer_ops_look_memory_up_at_the_step_reuse_distance():
    eff = with_(memory=[{"min_size": 0, "efficiency": 1.0}, {"min_size": 1e6, "efficiency": 1.0},
                        {"min_size": 4e6, "efficiency": 0.25}])  # fmt: skip
    op = record(op="aten.add_", phase="optimizer", category="vector", nbytes=1e6)
    # alone, 1e6 bytes stream at efficiency 1.0: 100 µs + 10 µs
    assert profile_op_time(op, CPU, eff, "fp32", "fp32", 1).seconds == pytest.approx(110e-6)
    # after a step moving 2e8 bytes its data comes from memory (looked up at the 8e6-byte cap): 0.25 -> 400 µs
    assert profile_op_time(op, CPU, eff, "fp32", "fp32", 1, step_bytes=2e8).seconds == pytest.approx(410e-6)


def test_optimizer_state_creation_is_not_a_steady_state_cost():
    from advisor.estimator.roofline import profile_times

    class P:
        ops = [
            record(op="aten.zeros_like", phase="optimizer", category="memory", nbytes=1e6),
            record(op="aten.add_", phase="optimizer", category="vector", nbytes=1e6),
        ]
        rnns = []
        module_calls = None
        precision = "fp32"
        batch_size = 1

        def bytes(self, batch):
            return 2e6

    times = profile_times(P(), CPU, EFF, "fp32", 1)
    # only add_: 1e6 bytes at 0.5 -> 200 µs + 10 µs; zeros_like made Adam's state in the profiled first step
    assert [t.seconds for _, t in times] == [pytest.approx(210e-6)]


def test_convolution_scale_against_a_gemm():
    eff = with_(conv_scale=0.5)
    # 1e6 FLOPs: GEMM 0.5 -> conv 0.25 -> 40 µs; memory 1e3 / 5e9 = 0.2 µs; + 10 µs
    assert op_time(CPU, eff, 1e6, 1e3, 1, "matrix", "fp32", op="aten.convolution").seconds == pytest.approx(50e-6)


def test_parse_shapes_and_convolution_dimensions():
    assert kernels.parse_shapes("[8, 3, 224, 224], [64, 3, 7, 7], 4 tensors (100 elements)") == [
        (8, 3, 224, 224),
        (64, 3, 7, 7),
        (100,),
    ]
    conv = record(op="aten.convolution", shapes="[8, 64, 56, 56], [64, 2, 3, 3]")
    # groups = 64 input channels / 2 per group = 32; reduction 2 x 3 x 3 = 18
    assert kernels.conv_dims(conv) == (64, 64, 32, 18)
    back = record(op="aten.convolution_backward", shapes="[8, 128, 28, 28], [8, 64, 56, 56], [128, 64, 1, 1]")
    assert kernels.conv_dims(back) == (64, 128, 1, 64)
    # a transposed convolution's weight is [C_in, C_out / groups, k, k]: ConvTranspose2d(128, 64, 2, 2) has 128
    # channels in, 64 out, one group (read as a plain one: 128 out in two groups); reduction 64 x 2 x 2 = 256
    up = record(op="aten.convolution", shapes="[8, 128, 16, 16], [128, 64, 2, 2], [64]", transposed=True)
    assert kernels.conv_dims(up) == (128, 64, 1, 256)
    # the groups show in the bias: ConvTranspose2d(128, 64, 2, 2, groups=2) has weight [128, 32, 2, 2], bias [64]
    grouped = record(op="aten.convolution", shapes="[8, 128, 16, 16], [128, 32, 2, 2], [64]", transposed=True)
    assert kernels.conv_dims(grouped) == (128, 64, 2, 128)
    back = record(
        op="aten.convolution_backward", shapes="[8, 64, 32, 32], [8, 128, 16, 16], [128, 64, 2, 2]", transposed=True
    )
    assert kernels.conv_dims(back) == (128, 64, 1, 256)


def test_tensor_core_eligibility_and_nchw_transposes():
    eff = with_(tensor_core_channels=8, nchw_transpose=["fp16"])
    first = record(op="aten.convolution", shapes="[8, 3, 224, 224], [64, 3, 7, 7]")
    assert not kernels.tensor_cores(first, eff)  # 3 input channels
    body = record(op="aten.convolution", shapes="[8, 64, 56, 56], [128, 64, 3, 3]")
    assert kernels.tensor_cores(body, eff)
    # NCHW fp16: the input (8·64·56·56 = 1,605,632 elements) and the output (twice the channels: 3,211,264) each
    # cross memory once more both ways: 2 bytes x 2 x (1,605,632 + 3,211,264) = 19,267,584 bytes
    assert kernels.transpose_bytes(body, eff, "fp16", 1.0) == pytest.approx(19_267_584)
    assert kernels.transpose_bytes(body, eff, "fp16", 2.0) == pytest.approx(2 * 19_267_584)  # a batch twice as big
    nhwc = body.model_copy(update={"layout": "channels_last"})
    assert kernels.transpose_bytes(nhwc, eff, "fp16", 1.0) == 0.0
    assert kernels.transpose_bytes(body, eff, "fp32", 1.0) == 0.0  # fp32 is not in nchw_transpose


def test_padded_channels_run_on_tensor_cores_with_idle_lanes_and_copies():
    eff = with_(tensor_core_channels=8, tensor_core_padding=True, nchw_transpose=["fp16"])
    # SSD's class head on the 38x38 map: 1024 channels in (a multiple of 8), 324 out, padded to 328
    head = record(op="aten.convolution", shapes="[8, 1024, 38, 38], [324, 1024, 3, 3], [324]")
    assert kernels.tensor_cores(head, eff)
    busy, copies = kernels.channel_padding(head, eff, "fp16")
    assert busy == pytest.approx(324 / 328)  # 1024·324 of 1024·328 lanes
    # the output, 8·324·38·38 = 3,742,848 elements, is written at 328 channels and copied back to 324:
    # 3,742,848 x (1 + 328/324) = 7,531,904 elements of 2 bytes = 15,063,808 bytes
    assert copies == pytest.approx(15_063_808)
    # the stem: 3 input channels padded to 8, so 3/8 of the lanes work; its input (8·3·224·224 = 1,204,224
    # elements) is read at 3 channels and written at 8: 1,204,224 x (1 + 8/3) = 4,415,488 elements, 8,830,976 bytes
    stem = record(op="aten.convolution", shapes="[8, 3, 224, 224], [64, 3, 7, 7]")
    assert kernels.channel_padding(stem, eff, "fp16") == pytest.approx((0.375, 8_830_976))
    # its backward pads the saved input twice (input gradient and weight gradient): 2 x 8,830,976 bytes
    stem_back = record(op="aten.convolution_backward", shapes="[8, 64, 112, 112], [8, 3, 224, 224], [64, 3, 7, 7]")
    assert kernels.channel_padding(stem_back, eff, "fp16") == pytest.approx((0.375, 17_661_952))
    assert kernels.channel_padding(stem, eff, "fp32") == (1.0, 0.0)  # fp32 runs no tensor-core padding
    body = record(op="aten.convolution", shapes="[8, 64, 56, 56], [128, 64, 3, 3]")
    assert kernels.channel_padding(body, eff, "fp16") == (1.0, 0.0)  # multiples of 8: nothing padded
    assert not kernels.tensor_cores(stem, with_(tensor_core_channels=8))  # a library that does not pad
    depthwise = record(op="aten.convolution", shapes="[8, 32, 56, 56], [32, 1, 3, 3]")  # 32 groups of 1 channel
    assert not kernels.tensor_cores(depthwise, eff)  # grouped convolutions are not padded: CUDA cores
    assert kernels.channel_padding(depthwise, eff, "fp16") == (1.0, 0.0)
    empty = record(op="aten.convolution", shapes="[8, 0, 56, 56], [4, 3, 3, 3]")  # a hand-edited profile
    assert kernels.channel_padding(empty, eff, "fp16") == (1.0, 0.0)


def test_tf32_convolutions_need_the_same_bytes_of_channels():
    eff = with_(tensor_core_channels=8, tensor_core_padding=True)
    assert kernels.channel_multiple(eff, "bf16") == 8
    assert kernels.channel_multiple(eff, "tf32") == 4  # 4 channels of 4 bytes: the same 16 bytes as 8 of 2
    # a depthwise convolution (one channel per group) in tf32 runs on the CUDA cores
    depthwise = record(op="aten.convolution", shapes="[8, 32, 56, 56], [32, 1, 3, 3]")
    assert not kernels.tensor_cores(depthwise, eff, "tf32")
    # ResNeXt's 4 channels per group are enough for tf32, not for bf16
    grouped = record(op="aten.convolution", shapes="[8, 128, 56, 56], [128, 4, 3, 3]")
    assert kernels.tensor_cores(grouped, eff, "tf32") and not kernels.tensor_cores(grouped, eff, "bf16")
    # the 3-channel stem in tf32 is padded to 4: 3/4 of the lanes work; its input (1,204,224 elements) is read
    # at 3 channels and written at 4: 1,204,224 x (1 + 4/3) = 2,809,856 elements of 4 bytes = 11,239,424 bytes
    stem = record(op="aten.convolution", shapes="[8, 3, 224, 224], [64, 3, 7, 7]")
    assert kernels.channel_padding(stem, eff, "tf32") == pytest.approx((0.75, 11_239_424))


def test_wave_quantization_over_the_multiprocessors():
    gpu = CPU.model_copy(update={"kind": "gpu", "sm_count": 100})
    eff = with_(gemm_tile=[128, 128])
    # (1280 x 512) by (512 x 1280): 10 x 10 = 100 tiles on 100 SMs: one full wave
    full = record(shapes="[1280, 512], [512, 1280]")
    assert kernels.wave_efficiency(full, gpu, eff, 2.0 * 1280 * 512 * 1280) == pytest.approx(1.0)
    # 1408 rows: 11 x 10 = 110 tiles, 2 waves of 100 slots: 110 / 200 = 0.55
    assert kernels.wave_efficiency(full, gpu, eff, 2.0 * 1408 * 512 * 1280) == pytest.approx(0.55)


def test_a_long_reduction_is_split_over_the_idle_multiprocessors():
    gpu = CPU.model_copy(update={"kind": "gpu", "sm_count": 100})
    eff = with_(gemm_tile=[128, 128])
    # a weight gradient (512 x 3072) by (3072 x 512): 4 x 4 = 16 output tiles; split-K: min(floor(100 / 16) = 6,
    # floor(3072 / 128) = 24) = 6 splits, 96 tiles in one wave of 100: 0.96 (unsplit: 16 / 100 = 0.16)
    grad_w = record(shapes="[512, 3072], [3072, 512]")
    assert kernels.wave_efficiency(grad_w, gpu, eff, 2.0 * 512 * 3072 * 512) == pytest.approx(0.96)
    # a short reduction of 256: at most floor(256 / 128) = 2 splits, 32 tiles: 0.32
    short = record(shapes="[512, 256], [256, 512]")
    assert kernels.wave_efficiency(short, gpu, eff, 2.0 * 512 * 256 * 512) == pytest.approx(0.32)
    # an implicit-GEMM convolution does not split: N=1 x 64 x 8 x 8 by 64 channels, 3x3: M = 64 rows, 1 x 1 tile
    conv = record(op="aten.convolution", shapes="[1, 64, 8, 8], [64, 64, 3, 3]")
    assert kernels.wave_efficiency(conv, gpu, eff, 2.0 * 64 * 64 * 576) == pytest.approx(0.01)


def test_a_device_runs_its_tensor_cores_at_its_measured_share_of_the_family_curves():
    gpu = CPU.model_copy(
        update={"kind": "gpu", "matrix_flops": CPU.matrix_flops.model_copy(update={"fp16": 1e14}), "gemm_share": 1.0}
    )
    eff = with_(gemm_share=0.8)  # the family's curves assume 0.8 of the peak; this card measured 1.0
    # 1e9 FLOPs at 1e14 x (1.0 / 0.8) x η 0.5 = 16 µs, + 10 µs overhead (26 µs); at the family's rate 20 + 10 = 30 µs
    assert op_time(gpu, eff, 1e9, 0.0, 1, "matrix", "fp16", phase="forward").seconds == pytest.approx(26e-6)
    assert op_time(gpu, with_(), 1e9, 0.0, 1, "matrix", "fp16", phase="forward").seconds == pytest.approx(30e-6)
    # an fp32 GEMM on the vector units keeps its rate: 1e9 / (1e11 x 0.5) = 20 ms, + 10 µs
    assert op_time(gpu, eff, 1e9, 0.0, 1, "matrix", "fp32", phase="forward").seconds == pytest.approx(20.01e-3)
    # memory-bound work is untouched: 1e6 bytes / (1e10 x 0.5) = 200 µs, + 10 µs
    assert op_time(gpu, eff, 1e6, 1e6, 1, "matrix", "fp16", phase="forward").seconds == pytest.approx(210e-6)


def test_a_slower_dtype_reads_the_size_curve_at_the_time_it_takes():
    # the matrix curve is a share of the 16-bit tensor-core peak: 0.2 up to 3e8 FLOPs, 0.8 from 1e9 on
    curve = [
        {"min_size": 0, "efficiency": 0.2},
        {"min_size": 3e8, "efficiency": 0.2},
        {"min_size": 1e9, "efficiency": 0.8},
    ]
    gpu = CPU.model_copy(
        update={"kind": "gpu", "matrix_flops": CPU.matrix_flops.model_copy(update={"fp16": 8e13, "fp32": 1e13})}
    )
    eff = with_(matrix=curve, matrix_reference="fp16")
    # a 2e8-FLOP fp32 GEMM takes 2e8 / 1e13 = 20 µs at peak, the time of 2e8 x 8 = 1.6e9 fp16 FLOPs: η 0.8, so
    # 2e8 / (1e13 x 0.8) = 25 µs + 10 µs overhead; the same GEMM in fp16 stays at η 0.2: 2e8 / (8e13 x 0.2) = 12.5 µs
    gemm = record(flops=2e8)
    assert op_time(gpu, eff, 2e8, 0.0, 1, "matrix", "fp32", phase="forward", op="aten.mm").seconds == pytest.approx(
        35e-6
    )
    assert op_time(gpu, eff, 2e8, 0.0, 1, "matrix", "fp16", phase="forward", op="aten.mm").seconds == pytest.approx(
        22.5e-6
    )
    assert profile_op_time(gemm, gpu, eff, "fp32", "fp32", 1).seconds == pytest.approx(35e-6)
    # without a reference dtype, or with a curve measured for fp32 (calibration), the curve is read as it stands
    assert op_time(gpu, with_(matrix=curve), 2e8, 0.0, 1, "matrix", "fp32", phase="forward").seconds == (
        pytest.approx(110e-6)
    )  # 2e8 / (1e13 x 0.2) = 100 µs + 10 µs
    measured = with_(matrix=curve, matrix_reference="fp16", matrix_by_dtype={"fp32": curve})
    assert op_time(gpu, measured, 2e8, 0.0, 1, "matrix", "fp32", phase="forward").seconds == pytest.approx(110e-6)
    # convolutions keep their own size lookup (conv_scale was fitted on it): 110 µs
    conv = op_time(gpu, eff, 2e8, 0.0, 1, "matrix", "fp32", phase="forward", op="aten.convolution")
    assert conv.seconds == pytest.approx(110e-6)


def test_unaligned_16bit_gemms_run_at_the_element_wise_kernels_rate():
    gpu = CPU.model_copy(
        update={"kind": "gpu", "sm_count": 100, "boost_clock": 2e9, "matrix_flops": CPU.matrix_flops.model_copy(
            update={"fp16": 1e15})}
    )  # fmt: skip
    eff = with_(tensor_core_channels=8, unaligned_gemm_flops_per_clock=345)
    # Transformer-XL's output layer: 267,735 words is not a multiple of 8, in the forward GEMM (its N), the
    # input gradient (its K) and the weight gradient (its M: the transposed incoming gradient's rows)
    forward = record(op="aten.addmm", dtype="fp16", shapes="[267735], [1536, 512], [512, 267735]")
    grad_in = record(dtype="fp16", shapes="[1536, 267735], [267735, 512]")
    grad_w = record(dtype="fp16", shapes="[267735, 1536], [1536, 512]")
    assert all(kernels.gemm_unaligned(op, eff, "fp16") for op in (forward, grad_in, grad_w))
    padded = record(dtype="fp16", shapes="[1536, 512], [512, 30528]")  # BERT's vocabulary padded to 30528
    assert not kernels.gemm_unaligned(padded, eff, "fp16")
    assert not kernels.gemm_unaligned(forward, eff, "fp32")  # fp32 and tf32: no measurement, no limit
    # attention scores over ViT's 197 tokens are off the grid; 192 tokens are not
    assert kernels.gemm_unaligned(record(op="aten.bmm", shapes="[96, 197, 64], [96, 64, 197]"), eff, "bf16")
    assert not kernels.gemm_unaligned(record(op="aten.bmm", shapes="[96, 192, 64], [96, 64, 192]"), eff, "bf16")
    assert not kernels.gemm_unaligned(forward, with_(tensor_core_channels=8), "fp16")  # a family without the figure
    # at most 345 FLOPs x 100 SMs x 2 GHz = 6.9e13 FLOP/s; a device without a clock has no limit
    assert kernels.unaligned_cap(gpu, eff) == pytest.approx(6.9e13)
    assert kernels.unaligned_cap(gpu.model_copy(update={"boost_clock": None}), eff) == 0.0
    # 6.9e10 FLOPs: 1 ms at the limit, against 6.9e10 / (1e15 x 0.5) = 0.138 ms aligned; + 10 µs overhead
    big = forward.model_copy(update={"flops": Linear(fixed=6.9e10)})
    assert profile_op_time(big, gpu, eff, "fp16", "fp16", 1).seconds == pytest.approx(1.01e-3)
    aligned = padded.model_copy(update={"flops": Linear(fixed=6.9e10)})
    assert profile_op_time(aligned, gpu, eff, "fp16", "fp16", 1).seconds == pytest.approx(0.148e-3)


def lstm(rows=4.0) -> RnnCall:
    return RnnCall(
        module="rnn",
        mode="LSTM",
        count=1,
        steps=2,
        rows=Linear(per_sample=rows),
        input_size=8,
        hidden_size=8,
        layers=1,
        directions=1,
        dtype="fp32",
    )


def test_fused_lstm_costs_its_gemms_cells_and_launches():
    eff = with_(fused_rnn=["LSTM"], launch_s=1e-6)
    times = rnn_times(lstm(), CPU, eff, "fp32", 1)
    fwd = times["forward"]
    # input GEMM (T·B = 8) x 8 by 8 x 32: 2·8·32·8 = 4,096 FLOPs; recurrent 2 steps x 2·4·32·8 = 4,096 FLOPs
    assert fwd[0].flops == pytest.approx(4096) and fwd[1].flops == pytest.approx(4096)
    # the cell: 30 FLOPs per row and unit per step: 30·4·8·2 = 1,920
    assert fwd[2].flops == pytest.approx(1920)
    # launches: (2·2 + 1) kernels x 1 µs, and the eager call's 10 µs
    assert fwd[3].seconds == pytest.approx(15e-6) and fwd[3].host_calls == 1
    # backward: recurrent data gradient 4,096 + input gradient 4,096 + two weight gradients 4,096 each
    assert sum(t.flops for t in times["backward"] if t.unit != "memory") == pytest.approx(4 * 4096 + 2 * 1920)


def test_only_decomposed_layers_of_fused_modes_are_replaced():
    from advisor.profiler.schema import Memory, Profile

    mem = Memory(
        parameter_bytes=1e6,
        gradient_bytes=1e6,
        optimizer_state_bytes=0,
        activation_bytes=Linear(),
        checkpoint_bytes=Linear(),
        temporary_peak_bytes=Linear(),
        peak_bytes=Linear(),
    )
    base = dict(
        name="t", model_file="t.py", model_sha256="0", created="now", advisor_version="0", torch_version="2",
        device="meta", precision="fp32", optimizer="sgd", profiled_batch_sizes=[1, 2], batch_size=1,
        input_shapes=[], linear_in_batch=True, parameters=1, trainable_parameters=1, memory=mem,
    )  # fmt: skip
    decomposed = Profile(**base, ops=[record(op="aten.addmm", module="rnn")], rnns=[lstm()])
    assert replaced_modules(decomposed, with_(fused_rnn=["LSTM"])) == {"rnn"}
    assert replaced_modules(decomposed, with_(fused_rnn=["GRU"])) == set()
    on_cpu = Profile(**base, ops=[record(op="aten.mkldnn_rnn_layer", module="rnn")], rnns=[lstm()])
    assert replaced_modules(on_cpu, with_(fused_rnn=["LSTM"]), cpu=True) == set()  # a CPU prices oneDNN's op
    assert replaced_modules(on_cpu, with_(fused_rnn=["LSTM"])) == {"rnn"}  # a GPU runs cuDNN's steps instead
    # a profile made on a GPU holds cuDNN's one op per layer, whose FLOPs hide the launches of every step: replaced
    on_gpu = Profile(**base, ops=[record(op="aten._cudnn_rnn", module="rnn")], rnns=[lstm()])
    assert replaced_modules(on_gpu, with_(fused_rnn=["LSTM"])) == {"rnn"}
    assert replaced_modules(on_gpu, with_(fused_rnn=["LSTM"]), cpu=True) == {"rnn"}
    # run step by step: the decomposed layer where nothing fuses its mode, never a library's own op
    assert recurrent_modules(decomposed, with_(fused_rnn=["GRU"])) == {"rnn"}
    assert recurrent_modules(decomposed, with_(fused_rnn=["LSTM"])) == set()
    assert recurrent_modules(on_cpu, with_(fused_rnn=[])) == set()


def test_a_recurrent_step_reads_its_weights_from_the_cache():
    eff = with_(matmul_by_intensity=CAP)
    op = OpRecord(
        op="aten.addmm", phase="forward", category="matrix", dtype="fp32", module="rnn", count=1,
        flops=Linear(per_sample=1e6), bytes_read=Linear(fixed=1.8e5, per_sample=2e4), bytes_written=Linear(),
    )  # fmt: skip
    # from memory: 2e5 bytes, intensity 5 -> cap 0.1: 1e6 / (1e11 * 0.1) = 100 µs (memory 2e5 / 5e9 = 40 µs)
    # + 10 µs overhead
    assert profile_op_time(op, CPU, eff, "fp32", "fp32", 1).seconds == pytest.approx(110e-6)
    # a recurrent step: only the 2e4 per-sample bytes count, intensity 50 -> cap 1.0, the size curve's 0.5 binds:
    # 1e6 / 5e10 = 20 µs; the memory roofline still reads every byte: 40 µs binds, + 10 µs
    t = profile_op_time(op, CPU, eff, "fp32", "fp32", 1, recurrent=True)
    assert t.seconds == pytest.approx(50e-6)
    # at batch 4 the per-sample bytes are 8e4 (intensity 4e6 / 8e4 = 50 again: 80 µs) against 2.6e5 bytes
    # (52 µs of memory): 80 + 10 µs
    assert profile_op_time(op, CPU, eff, "fp32", "fp32", 4, recurrent=True).seconds == pytest.approx(90e-6)


def test_the_op_table_reads_recurrent_weights_from_the_cache_too():
    """passes.py agrees with profile_op_time on every record of the shipped LSTM (a meta profile: per-step ops)
    where no fused kernel runs it and a GEMM cap applies."""
    import numpy as np

    from advisor import api

    prof = api.profile_from("lstm")
    eff = with_(matmul_by_intensity=[{"min_size": 0, "efficiency": 0.1}, {"min_size": 100, "efficiency": 1.0}])
    got, want, table = table_and_scalar(prof, eff)
    assert table.hot.sum() > 0 and all(prof.ops[i].module.startswith("lstm") for i in np.flatnonzero(table.hot))
    assert got == pytest.approx(want, rel=1e-12)


def test_a_recurrent_layers_loop_ops_cost_what_the_calibration_measured():
    """A layer run step by step issues its forward ops from C++: each costs Efficiency.loop_op_s instead of the
    forward phase's cost per op, and each call of the layer loop_call_s besides; both paths agree."""
    from advisor import api
    from advisor.estimator.roofline import profile_times

    prof = api.profile_from("lstm")  # a meta profile: the 2-layer LSTM's per-step ops, one call of module "lstm"
    plain = with_(fused_rnn=[])  # nothing fused: the LSTM runs step by step
    loop = with_(fused_rnn=[], loop_op_s=1e-6, loop_call_s=50e-6)
    got, want, table = table_and_scalar(prof, loop)
    assert got == pytest.approx(want, rel=1e-12)
    assert table.module_s == pytest.approx(50e-6)  # one call x 50 µs (no module cost in the fixture)
    assert step_overhead(prof, loop, {"lstm"}) == {"forward": pytest.approx(50e-6)}
    assert step_overhead(prof, loop) == {}  # no layer run step by step: no loop calls

    def forward(eff):
        return sum(t.seconds for phase, t in profile_times(prof, CPU, eff, "fp32", 3) if phase == "forward")

    # 919 of the 927 forward ops lie inside "lstm": 919 x (10 - 1) µs = 8.271 ms less, plus the call's 50 µs
    assert forward(loop) - forward(plain) == pytest.approx(-8.271e-3 + 50e-6, rel=1e-9)
    # the backward ops (issued by autograd's engine) keep the phase's cost
    backward = [
        sum(t.seconds for ph, t in profile_times(prof, CPU, e, "fp32", 3) if ph == "backward") for e in (plain, loop)
    ]
    assert backward[0] == pytest.approx(backward[1], rel=1e-12)


def test_host_issue_rate_bounds_a_phase_of_small_ops():
    from advisor.profiler.schema import Memory, Profile  # noqa: F401

    eff = with_(host_op_s=20e-6, module_overhead_s=5e-6)

    class P:
        module_calls = 10

    sums = {"forward": [1e-3, 0, 0, 0, 0, 0], "backward": [5e-3, 0, 0, 0, 0, 0]}
    out = host_bound(sums, {"forward": 100, "backward": 100}, P, eff)
    # forward: host 100 x 20 µs + 10 x 5 µs = 2.05 ms > 1 ms of device work: 2.05 ms, 1.05 ms of it overhead
    assert out["forward"][0] == pytest.approx(2.05e-3) and out["forward"][3] == pytest.approx(1.05e-3)
    assert out["backward"][0] == pytest.approx(5e-3)  # 2 ms of issuing hides behind 5 ms of kernels
    # a calibrated GPU's host cost by phase: backward 100 x 60 µs = 6 ms > 5 ms of kernels; forward keeps 20 µs
    eff = with_(host_op_s=20e-6, host_phase_s={"backward": 60e-6})
    sums = {"forward": [1e-3, 0, 0, 0, 0, 0], "backward": [5e-3, 0, 0, 0, 0, 0]}
    out = host_bound(sums, {"forward": 100, "backward": 100}, P, eff)
    assert out["forward"][0] == pytest.approx(2e-3) and out["backward"][0] == pytest.approx(6e-3)


def test_module_calls_cost_python_time_on_a_cpu():
    class P:
        module_calls = 12

    assert step_overhead(P, with_(module_overhead_s=2e-6)) == {"forward": pytest.approx(24e-6)}  # 12 x 2 µs
    assert step_overhead(P, with_(module_overhead_s=2e-6, host_op_s=1e-5)) == {}  # the host bound counts it


def test_gather_gradient_is_a_zeroed_table_then_a_scatter():
    eff = with_(op_curves={"aten.embedding_dense_backward": [{"min_size": 0, "efficiency": 0.1}]})
    op = OpRecord(
        op="aten.embedding_dense_backward",
        phase="backward",
        category="vector",
        dtype="fp32",
        module="emb",
        count=1,
        flops=Linear(),
        bytes_read=Linear(fixed=1e6),
        bytes_written=Linear(fixed=4e6),
    )
    # the 4e6-byte table at the memory curve's 0.5: 4e6 / 5e9 = 800 µs; the 1e6 bytes of gathered rows at the
    # scatter's own 0.1: 1e6 / 1e9 = 1 ms; + 10 µs overhead
    assert profile_op_time(op, CPU, eff, "fp32", "fp32", 1).seconds == pytest.approx(1.81e-3)


def test_an_estimate_says_what_unaligned_gemms_cost_and_what_to_pad():
    from advisor import api
    from advisor.estimator.passes import unaligned_time
    from advisor.estimator.setup import setup_from_catalog

    cat = api.catalog()
    prof = api.profile_from("gpt2_124m")  # a 50,257-word head, tied to the embedding
    est = api.estimate(prof, "h100-sxm", precision="bf16-mixed", micro_batch=12, global_batch=12, cat=cat)
    setup = setup_from_catalog(prof, cat, est.config, None)
    seconds, _ = unaligned_time(setup.table, 12, 1, 1, False)
    # its three GEMMs (logits, input gradient, weight gradient) of 2 x 12,288 tokens x 768 x 50,257 FLOPs each,
    # 2.8457e12 in all, at 345 FLOPs x 132 SMs x 1.98 GHz = 9.0169e13 FLOP/s: 31.56 ms; nothing else is off the grid
    assert seconds == pytest.approx(2.8457e12 / 9.0169e13, rel=1e-3)
    note = next(n for n in est.assumptions if "not a multiple of 8" in n)
    assert f"{seconds / est.step_time_s:.0%} of the step" in note and "[768, 50257]" in note
    tpu = api.estimate(prof, "tpu-v5p", precision="bf16-mixed", micro_batch=12, global_batch=12, cat=cat)
    assert not any("not a multiple of 8" in n for n in tpu.assumptions)  # XLA pads it


def test_nchw_batch_norm_runs_one_block_per_channel():
    """cuDNN's batch norm on NCHW tensors whose channels outgrow one SM: a call takes a channel's N·H·W elements
    over one block's rate (benchmarks/bn_kernels.py: 0.67 forward, 0.335 backward per clock on an H200), whatever
    the bandwidth; the channels run two blocks per SM at a time."""
    from advisor.catalog.schema import ChannelBlocks

    gpu = CPU.model_copy(update={"kind": "gpu", "sm_count": 132, "boost_clock": 1.98e9, "memory_bandwidth": 4.8e12})
    rule = ChannelBlocks(forward_per_clock=0.67, backward_per_clock=0.335, blocks_per_sm=2, channel_bytes_max=131072)
    eff = with_(batch_norm_nchw=rule, memory=[{"min_size": 0, "efficiency": 1.0}], op_overhead_s=1e-9)
    stem = record(op="aten.cudnn_batch_norm", category="vector", shapes="[8, 32, 112, 112], [32], [32], [32], [32]")
    grad = record(op="aten.native_batch_norm_backward", phase="backward", category="vector",
                  shapes="[8, 32, 112, 112], [8, 32, 112, 112], [32], [32], [32], [32], [32]")  # fmt: skip
    # batch 128: 112·112·128 = 1,605,632 elements per channel, 6.4 MB of fp32 > 128 KiB; 32 channels < 264 slots:
    # 1,605,632 / (0.67 x 1.98e9) = 1.2103 ms forward, / (0.335 x 1.98e9) = 2.4207 ms backward
    assert kernels.channel_block_s(stem, gpu, rule, "fp32", 128) == pytest.approx(1.2103e-3, rel=1e-4)
    assert kernels.channel_block_s(grad, gpu, rule, "fp32", 128) == pytest.approx(2.4207e-3, rel=1e-4)
    # 528 channels are two waves of 264 blocks: 2.4207 ms
    wide = stem.model_copy(update={"shapes": "[8, 528, 112, 112], [528]"})
    assert kernels.channel_block_s(wide, gpu, rule, "fp32", 128) == pytest.approx(2.4207e-3, rel=1e-4)
    # batch 2: 25,088 elements, 100,352 B of fp32 fit the 128 KiB a forward channel may hold (singleread: the memory
    # rate); the backward holds the input and its gradient, 200,704 B, so it still runs one block per channel
    assert kernels.channel_block_s(stem, gpu, rule, "fp32", 2) == 0.0
    assert kernels.channel_block_s(grad, gpu, rule, "fp32", 2) == pytest.approx(25088 / (0.335 * 1.98e9))
    # NHWC tensors run cuDNN's NHWC kernels, a family without the rule its memory traffic
    nhwc = stem.model_copy(update={"layout": "channels_last"})
    assert kernels.channel_block_s(nhwc, gpu, rule, "fp32", 128) == 0.0
    # in the step: the floor against the memory roofline of the input read, 32·112·112·4 B x 128 = 205.5 MB at
    # 4.8 TB/s = 42.8 µs (+ 1 ns overhead); channels-last profiles and families without the rule keep that
    big = stem.model_copy(update={"bytes_read": Linear(per_sample=32 * 112 * 112 * 4)})
    assert profile_op_time(big, gpu, eff, "fp32", "fp32", 128).seconds == pytest.approx(1.2103e-3, rel=1e-4)
    roofline = pytest.approx(42.8e-6, rel=1e-3)
    assert profile_op_time(big, gpu, eff, "fp32", "fp32", 128, channels_last=True).seconds == roofline
    assert profile_op_time(big, gpu, with_(memory=eff.memory, op_overhead_s=1e-9), "fp32", "fp32", 128).seconds == (
        roofline
    )


def test_the_op_table_runs_nchw_batch_norm_one_block_per_channel_too():
    """passes.py agrees with profile_op_time on every record of the shipped ResNet-50 on an H100 at micro-batches
    where batch norm runs at the memory rate (2: forward), one block per channel (64) and both; and a profile
    whose convolutions run channels-last keeps its batch norms at the memory rate."""
    import numpy as np

    from advisor import api
    from advisor.estimator.parallel.tensor import roles
    from advisor.estimator.passes import op_table, record_times
    from advisor.estimator.roofline import STATE_INIT

    cat = api.catalog()
    device = cat.devices["h100-sxm"]
    eff = cat.efficiency[device.efficiency]
    prof = api.profile_from("resnet50")
    for micro in (2, 64):
        table = op_table(prof, roles(prof, prof.structure), device, eff, "bf16-mixed")
        got = record_times(table, [micro], [1], [1], [False])["seconds"][0]
        want = [
            0.0
            if o.phase == "optimizer" and o.op in STATE_INIT
            else profile_op_time(o, device, eff, prof.precision, "bf16-mixed", micro, prof.bytes(micro),
                                 prof.batch_size).seconds
            for o in prof.ops
        ]  # fmt: skip
        assert got == pytest.approx(np.asarray(want), rel=1e-12)
    assert table.blocks[:, 2].any()
    nhwc = prof.model_copy(
        update={"ops": [o.model_copy(update={"layout": "channels_last"}) if o.op == "aten.convolution" else o
                        for o in prof.ops]}
    )  # fmt: skip
    assert not op_table(nhwc, roles(nhwc, nhwc.structure), device, eff, "bf16-mixed").blocks.any()


def test_mixed_precision_optimizer_updates_fp32_master_weights():
    """A model profiled in 16 bits (apex O2, `--math fp16`) and estimated under mixed precision keeps fp32 master
    weights: its optimizer ops move fp32, twice the profiled bytes; its forward ops stay 16-bit."""
    from advisor.estimator.roofline import effective_dtype

    assert effective_dtype("bf16", "vector", "bf16", "fp16-mixed", "optimizer") == "fp32"
    assert effective_dtype("bf16", "vector", "bf16", "bf16-mixed", "optimizer") == "fp32"
    assert effective_dtype("bf16", "vector", "bf16", "fp16-mixed", "forward") == "fp16"
    assert effective_dtype("bf16", "vector", "bf16", "bf16", "optimizer") == "bf16"  # pure bf16: no master copy
    adam = record(op="aten._foreach_add_", phase="optimizer", category="vector", dtype="bf16", nbytes=1e6)
    # 1e6 bytes read per sample at batch 1, as fp32: 2e6 B / (1e10 B/s x 0.5) = 400 µs, + 10 µs overhead
    assert profile_op_time(adam, CPU, EFF, "bf16", "fp16-mixed", 1).seconds == pytest.approx(410e-6)
    # profiled and estimated under the same precision: as recorded, 1e6 / 5e9 = 200 µs + 10 µs
    assert profile_op_time(adam, CPU, EFF, "bf16", "bf16", 1).seconds == pytest.approx(210e-6)


def assert_table_is_scalar(prof, device, eff, micros) -> None:
    """The vectorized op table (passes.record_times) gives every record the seconds of the scalar
    roofline.profile_op_time at each micro-batch of `micros`, fp32 on `device` under `eff`."""
    import numpy as np

    from advisor.estimator.parallel.tensor import roles
    from advisor.estimator.passes import op_table, record_times
    from advisor.estimator.roofline import STATE_INIT

    r = roles(prof, prof.structure)
    for micro in micros:
        table = op_table(prof, r, device, eff, "fp32")
        got = record_times(table, [micro], [1], [1], [False])["seconds"][0]
        want = [
            0.0
            if o.phase == "optimizer" and o.op in STATE_INIT
            else profile_op_time(
                o, device, eff, prof.precision, "fp32", micro, prof.bytes(micro), prof.batch_size
            ).seconds
            for o in prof.ops
        ]
        assert got == pytest.approx(np.asarray(want), rel=1e-12)


def test_an_embedding_gradient_sorts_its_indices_past_the_direct_kernel():
    """IndexSort (the NVIDIA families' index_sort): PyTorch's CUDA embedding backward radix-sorts its indices
    (304 B per index) in 28 extra kernels, except aten.embedding_dense_backward with at most 3,072 indices per
    call; the scalar op cost and the vectorized op table agree with and without the sort."""

    from advisor import api
    from advisor.profiler.profile import profile_model

    cat = api.catalog()
    gpu = cat.devices["h100-sxm"]
    eff = cat.efficiency[gpu.efficiency].model_copy(update={"memory": EFF.memory})  # flat 0.5 of 3.35 TB/s
    plain = eff.model_copy(update={"index_sort": None})
    prof = profile_model(ROOT / "tests/models/tiny_recsys.py", batch_size=8, device="meta")
    dense = next(o for o in prof.ops if o.op == "aten.embedding_dense_backward")  # [8, 16], [8]: 1 index a sample
    bag = next(o for o in prof.ops if o.op == "aten._embedding_bag_backward")  # [32] indices: 4 a sample

    def extra(op, micro):
        args = (gpu, eff, prof.precision, "fp32", micro, 0.0, prof.batch_size)
        return profile_op_time(op, *args).seconds - profile_op_time(op, gpu, plain, *args[2:]).seconds

    # micro-batch 2,048: the plain lookup's 2,048 indices stay on the direct kernel (<= 3,072): nothing added
    assert extra(dense, 2048) == 0.0
    # the bag's 8,192 indices sort: 304 x 8,192 = 2,490,368 B at 0.5 x 3.35e12 B/s = 1.48679 us, plus 28 kernels
    # x launch_s 3 us = 84 us -> 85.48679 us
    assert extra(bag, 2048) == pytest.approx(2_490_368 / 1.675e12 + 28 * 3e-6, rel=1e-9)
    # micro-batch 4,096: the plain lookup sorts too: 304 x 4,096 = 1,245,184 B -> 0.74339 us + 84 us
    assert extra(dense, 4096) == pytest.approx(1_245_184 / 1.675e12 + 28 * 3e-6, rel=1e-9)
    assert_table_is_scalar(prof, gpu, eff, (2, 2048, 4096))


def test_an_embedding_lookup_takes_one_block_per_row():
    """RowGather (the NVIDIA families' row_gather): PyTorch's CUDA lookup runs one thread block per looked-up row
    and per 4,096 B of it, each block 160 clocks of one multiprocessor; short rows take the blocks' time, not the
    bytes'. The scalar op cost and the vectorized op table agree with and without the rule."""

    from advisor import api
    from advisor.profiler.profile import profile_model

    cat = api.catalog()
    gpu = cat.devices["h100-sxm"]  # 132 SMs at 1.98 GHz
    eff = cat.efficiency[gpu.efficiency].model_copy(update={"memory": EFF.memory})  # flat 0.5 of 3.35 TB/s
    plain = eff.model_copy(update={"row_gather": None})
    prof = profile_model(ROOT / "tests/models/tiny_recsys.py", batch_size=8, device="meta")
    lookup = next(o for o in prof.ops if o.op == "aten.embedding")  # [1000, 16] fp32 table, [8] indices: 64 B rows
    assert kernels.gather_blocks_per_byte(lookup, eff.row_gather, "fp32") == 1 / 64
    # a 6,144 B row (1,536 fp32) takes ceil(6144 / 4096) = 2 blocks
    wide = lookup.model_copy(update={"shapes": "[1000, 1536], [8]"})
    assert kernels.gather_blocks_per_byte(wide, eff.row_gather, "fp32") == 2 / 6144
    assert kernels.gather_blocks_per_byte(lookup, None, "fp32") == 0.0

    def body(e, micro):
        t = profile_op_time(lookup, gpu, e, prof.precision, "fp32", micro, 0.0, prof.batch_size)
        return t.seconds - t.overhead_s

    # 1,000,000 rows of 64 B: 1e6 blocks x 160 clocks / (132 SMs x 1.98e9 /s) = 612.18 us, where the bytes
    # (64 MB written, 8 MB of indices and 64 MB of rows read: 136 MB at 1.675e12 B/s = 81.19 us) take less
    assert body(eff, 1_000_000) == pytest.approx(1e6 * 160 / (132 * 1.98e9), rel=1e-9)
    assert body(plain, 1_000_000) < 0.2 * body(eff, 1_000_000)
    assert_table_is_scalar(prof, gpu, eff, (2, 2048, 1_000_000))


def test_an_embedding_gradient_of_a_slice_is_copied_first():
    """A lookup's gradient that arrives as a column slice (cat's backward) is not contiguous: PyTorch's embedding
    backward copies it first. The profile marks such records 'strided' and the estimate adds the copy's traffic,
    the same in the scalar op cost and the vectorized op table."""

    from advisor import api
    from advisor.profiler.profile import profile_model

    cat = api.catalog()
    gpu = cat.devices["h100-sxm"]
    eff = cat.efficiency[gpu.efficiency].model_copy(update={"memory": EFF.memory})  # flat 0.5 of 3.35 TB/s
    prof = profile_model(ROOT / "tests/models/tiny_recsys.py", batch_size=8, device="meta")
    dense = next(o for o in prof.ops if o.op == "aten.embedding_dense_backward")  # [8, 16] fp32 slice of cat's grad
    bag = next(o for o in prof.ops if o.op == "aten._embedding_bag_backward")  # the other half of it
    assert dense.layout == "strided" and bag.layout == "strided"
    # 2 x 16 x 4 B = 128 B a sample (read and written once)
    assert kernels.strided_copy_bytes(dense, "fp32", 8) == 128.0
    assert kernels.strided_copy_bytes(dense.model_copy(update={"layout": None}), "fp32", 8) == 0.0

    def seconds(op, micro):
        return profile_op_time(op, gpu, eff, prof.precision, "fp32", micro, 0.0, prof.batch_size).seconds

    # micro-batch 1,000: 128,000 B more at 0.5 x 3.35e12 B/s = 76.418 ns
    added = seconds(dense, 1000) - seconds(dense.model_copy(update={"layout": None}), 1000)
    assert added == pytest.approx(128_000 / 1.675e12, rel=1e-9)
    assert_table_is_scalar(prof, gpu, eff, (2, 1000, 8192))


def test_a_layernorm_over_a_permuted_tensor_is_copied_first(tmp_path):
    """LayerNorm over channels of an NCHW activation (ConvNeXt-style: x.permute(0, 2, 3, 1)) gets a non-contiguous
    input, which layer_norm_cpu and its backward copy first; a LayerNorm over a contiguous tensor does not."""
    from advisor.profiler.profile import profile_model

    model = tmp_path / "permuted_norm.py"
    model.write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.a, self.b = nn.LayerNorm(8), nn.LayerNorm(8)\n\n"
        "    def forward(self, x):\n"
        "        return self.b(self.a(x.permute(0, 2, 3, 1)).contiguous()).sum()\n\n\n"
        "def build_model():\n    return Net()\n\n\n"
        "def example_batch(batch_size):\n    return torch.randn(batch_size, 8, 4, 4, requires_grad=True)\n\n\n"
        "def training_step(model, batch):\n    return model(batch)\n"
    )
    prof = profile_model(model, batch_size=2, device="meta")
    norms = [o for o in prof.ops if o.op in ("aten.native_layer_norm", "aten.native_layer_norm_backward")]
    by = {(o.op, o.module): o.layout for o in norms}
    assert by == {
        ("aten.native_layer_norm", "a"): "strided",
        ("aten.native_layer_norm", "b"): None,
        ("aten.native_layer_norm_backward", "a"): "strided",  # its saved input is the permuted view
        ("aten.native_layer_norm_backward", "b"): None,
    }
    first = next(o for o in norms if o.module == "a" and o.phase == "forward")
    # [2, 4, 4, 8] fp32 read and written once: 2 x 256 x 4 B = 2,048 B over the batch of 2 -> 1,024 B a sample
    assert kernels.strided_copy_bytes(first, "fp32", 2) == 1024.0


def test_an_fp32_gemm_on_the_cuda_cores_runs_at_its_measured_share():
    """fp32_gemm_share: an fp32 GEMM on a GPU's CUDA cores reads the tensor-core curve at its own speed
    (matrix_reference) and runs at the device's (else the family's) measured fp32 share over the family's
    tensor share; 16-bit GEMMs and convolutions keep their rates, and the op table agrees with the scalar cost."""
    curve = [
        {"min_size": 0, "efficiency": 0.2},
        {"min_size": 3e8, "efficiency": 0.2},
        {"min_size": 1e9, "efficiency": 0.8},
    ]
    gpu = CPU.model_copy(
        update={
            "kind": "gpu",
            "matrix_flops": CPU.matrix_flops.model_copy(update={"fp16": 8e13}),
            "vector_flops": CPU.vector_flops.model_copy(update={"fp32": 1e13}),
            "fp32_gemm_share": 0.9,
        }
    )
    eff = with_(matrix=curve, matrix_reference="fp16", gemm_share=0.8, fp32_gemm_share=0.72)

    def seconds(device, e, dtype="fp32", op="aten.mm"):
        return op_time(device, e, 2e8, 0.0, 1, "matrix", dtype, phase="forward", op=op).seconds

    # 2e8 FLOPs take 20 us at the 1e13 fp32 peak, the time of 1.6e9 fp16 FLOPs: eta 0.8. The card measured 0.9
    # of its fp32 peak where the family's curves stand for 0.8 of the tensor peak: 1e13 x 0.9 / 0.8 = 1.125e13,
    # 2e8 / (1.125e13 x 0.8) = 22.222 us + 10 us overhead
    assert seconds(gpu, eff) == pytest.approx(32.2222e-6, rel=1e-5)
    # a card without its own figure takes the family's 0.72: 2e8 / (0.9e13 x 0.8) = 27.778 us + 10 us
    plain = gpu.model_copy(update={"fp32_gemm_share": None})
    assert seconds(plain, eff) == pytest.approx(37.7778e-6, rel=1e-5)
    # no figures at all: the curve's rate, 2e8 / (1e13 x 0.8) = 25 us + 10 us
    assert seconds(plain, with_(matrix=curve, matrix_reference="fp16")) == pytest.approx(35e-6)
    # an fp16 GEMM stays on the tensor cores at eta 0.2 (2e8 FLOPs): 2e8 / (8e13 x 0.2) = 12.5 us + 10 us
    assert seconds(gpu, eff, dtype="fp16") == pytest.approx(22.5e-6)
    # a convolution reads the curve as it stands: 2e8 / (1e13 x 0.2) = 100 us + 10 us
    assert seconds(gpu, eff, op="aten.convolution") == pytest.approx(110e-6)

    from advisor import api
    from advisor.profiler.profile import profile_model

    cat = api.catalog()
    v100 = cat.devices["v100-sxm2-16gb"]
    prof = profile_model(ROOT / "tests/models/tiny_gpt.py", batch_size=4, device="meta")
    assert_table_is_scalar(prof, v100, cat.efficiency[v100.efficiency], (1, 64, 4096))
    # the estimate says so: the V100's 0.896 over Volta's 0.759 = 1.18; Volta's curve top 0.671 x 1.1805 = 0.792
    notes = api.estimate(prof, "v100-sxm2-16gb", precision="fp32", micro_batch=4, global_batch=4, cat=cat).assumptions
    line = next(n for n in notes if "CUDA cores" in n)
    assert "at 1.18 x" in line and "share 0.896" in line and "top 0.792 of the fp32 peak" in line
    mixed = api.estimate(prof, "v100-sxm2-16gb", precision="fp16-mixed", micro_batch=4, global_batch=4, cat=cat)
    assert not any("CUDA cores" in n for n in mixed.assumptions)


def test_an_optimizer_update_measured_on_cold_data_is_looked_up_at_the_whole_step():
    """roofline.reuse_cap: an optimizer update finds its data where the whole last step left it. The memory curve
    past a few MB measures fresh allocations, so the lookup stops at REUSE_CAP (8 MB); an op whose own curve has
    a point measured in place past COLD_BYTES (64 MB a call, `advisor calibrate`'s cold point) is looked up at the
    step's whole traffic. The op table agrees with the scalar cost."""
    from advisor.estimator.roofline import COLD_BYTES, REUSE_CAP

    update = record(op="aten.add_", phase="optimizer", category="memory", nbytes=0.0)
    update = update.model_copy(update={"bytes_read": Linear(fixed=1e6)})  # 1 MB a step, whatever the batch

    def seconds(last: float, step_bytes: float) -> float:
        curve = [{"min_size": 0, "efficiency": 1.0}, {"min_size": 1e6, "efficiency": 1.0}]
        eff = with_(op_curves={"aten.add_": [*curve, {"min_size": last, "efficiency": 0.25}]})
        return profile_op_time(update, CPU, eff, "fp32", "fp32", 1, step_bytes).seconds

    # cold point at 2e8 B, step of 1e9 B: looked up at 1e9, flat past 2e8 at 0.25: 1e6 / (1e10 x 0.25) = 400 us,
    # + 10 us overhead
    assert COLD_BYTES <= 2e8
    assert seconds(2e8, 1e9) == pytest.approx(410e-6)
    # the curve's last point at 1.2e7 B (in cache, no cold point): looked up at REUSE_CAP = 8e6, between 1e6 (1.0)
    # and 1.2e7 (0.25) on a power law: 8^(ln 0.25 / ln 12) = 0.31346, 1e6 / (1e10 x 0.31346) = 319.02 us + 10 us
    assert REUSE_CAP == 8e6
    assert seconds(1.2e7, 1e9) == pytest.approx(329.02e-6, rel=1e-4)
    # a step smaller than the cold point's size is looked up where it is: 1e8 B, 1e8 / 1e6 = 100 of 200, 0.25 ^
    # (ln 100 / ln 200) = 0.29971: 1e6 / (1e10 x 0.29971) = 333.65 us + 10 us
    assert seconds(2e8, 1e8) == pytest.approx(343.65e-6, rel=1e-4)

    from advisor.calibration.ops import INPLACE
    from advisor.profiler.profile import profile_model

    prof = profile_model(ROOT / "tests/models/tiny_mlp.py", batch_size=4, device="cpu", repeats=0)
    cold = {op: [{"min_size": 0, "efficiency": 0.5}, {"min_size": 2e8, "efficiency": 0.1}] for op in INPLACE}
    assert any(o.phase == "optimizer" and o.op in INPLACE for o in prof.ops)
    assert_table_is_scalar(prof, CPU, with_(op_curves=cold), (1, 4096, 1_000_000))  # steps of ~1e3 .. 1e9 B


def test_a_multi_tensor_update_reads_its_single_tensor_forms_curve():
    """roofline.own_curve: the optimizers' `_foreach` updates (what a profile on CUDA or meta records) take the
    measured curve of their single-tensor form, the cold point included (aten._foreach_add_ -> aten.add_; an
    in-place form measured only out of place -> that: _foreach_div_ -> aten.div); ops without one keep none."""
    from advisor.estimator.roofline import own_curve

    curves = {
        "aten.add_": [{"min_size": 0, "efficiency": 1.0}, {"min_size": 1e6, "efficiency": 1.0},
                      {"min_size": 2e8, "efficiency": 0.25}],
        "aten.div": [{"min_size": 0, "efficiency": 0.5}],
    }  # fmt: skip
    eff = with_(op_curves=curves)
    assert own_curve(eff, "aten._foreach_add_") is eff.op_curves["aten.add_"]
    assert own_curve(eff, "aten._foreach_div_") is eff.op_curves["aten.div"]
    assert own_curve(eff, "aten._foreach_norm") is None and own_curve(eff, None) is None
    # the same 1 MB update as one multi-tensor call, a step of 1e9 B: the cold point's 0.25, 1e6 / (1e10 x 0.25)
    # = 400 us + 10 us overhead, as for aten.add_ (the test above)
    update = record(op="aten._foreach_add_", phase="optimizer", category="vector", nbytes=0.0)
    update = update.model_copy(update={"bytes_read": Linear(fixed=1e6)})
    assert profile_op_time(update, CPU, eff, "fp32", "fp32", 1, 1e9).seconds == pytest.approx(410e-6)

    from advisor.calibration.ops import INPLACE
    from advisor.profiler.profile import profile_model

    prof = profile_model(ROOT / "tests/models/tiny_mlp.py", batch_size=4, device="meta")
    assert any(o.op.startswith("aten._foreach_") for o in prof.ops)
    cold = {op: [{"min_size": 0, "efficiency": 0.5}, {"min_size": 2e8, "efficiency": 0.1}] for op in INPLACE}
    assert_table_is_scalar(prof, CPU, with_(op_curves=cold), (1, 4096, 1_000_000))


def test_a_cpu_convolution_computes_whole_channel_blocks(tmp_path):
    """conv_channel_block (measured by advisor calibrate): oneDNN on AVX-512 keeps activations in blocks of 16
    channels, so a dense convolution runs its output channels, and its input channels past one block, rounded up
    to whole blocks. The scalar op cost and the vectorized op table agree."""
    from advisor.profiler.profile import profile_model

    assert kernels.blocked_channels(24, 24, 16) == (32, 32)
    assert kernels.blocked_channels(3, 24, 16) == (3, 32)  # an image's 3 channels are read as they are
    assert kernels.blocked_channels(40, 12, 16) == (48, 16)  # a 12-channel output is computed as 16
    assert kernels.blocked_channels(16, 16, 16) == (16, 16)
    assert kernels.blocked_channels(20, 20, 8) == (24, 24)
    eff = with_(conv_channel_block=16)
    body = record(op="aten.convolution", flops=1e6, shapes="[16, 24, 32, 32], [24, 24, 3, 3]")
    assert kernels.channel_padding(body, eff, "fp32") == (pytest.approx(576 / 1024), 0.0)  # 24·24 of 32·32
    assert kernels.channel_padding(body, eff, "bf16") == (pytest.approx(576 / 1024), 0.0)  # any dtype
    assert kernels.channel_padding(body, EFF, "fp32") == (1.0, 0.0)  # a family that has not measured it
    stem = record(op="aten.convolution", shapes="[16, 3, 32, 32], [24, 3, 3, 3]")
    assert kernels.channel_padding(stem, eff, "fp32") == (pytest.approx(0.75), 0.0)  # 3·24 of 3·32
    # a backward record's shapes: incoming gradient, input, weight; 24 in -> 32, 40 out -> 48: 960 of 1,536
    back = record(op="aten.convolution_backward", shapes="[16, 40, 32, 32], [16, 24, 32, 32], [40, 24, 3, 3]")
    assert kernels.channel_padding(back, eff, "fp32") == (pytest.approx(0.625), 0.0)
    depthwise = record(op="aten.convolution", shapes="[16, 24, 32, 32], [24, 1, 3, 3]")
    assert kernels.channel_padding(depthwise, eff, "fp32") == (1.0, 0.0)  # grouped: not blocked this way
    # a 1x1 convolution runs on GEMM-like kernels at its real channels: 40 -> 24 not priced as 48 -> 32 (0.625)
    pointwise = record(op="aten.convolution", shapes="[16, 40, 32, 32], [24, 40, 1, 1]")
    assert kernels.channel_padding(pointwise, eff, "fp32") == (1.0, 0.0)
    pointwise_back = record(op="aten.convolution_backward", shapes="[16, 24, 32, 32], [16, 40, 32, 32], [24, 40, 1, 1]")
    assert kernels.channel_padding(pointwise_back, eff, "fp32") == (1.0, 0.0)
    # a 1x3 kernel is spatial: 40 -> 24 computed as 48 -> 32, 960 of 1,536
    strip = record(op="aten.convolution", shapes="[16, 40, 32, 32], [24, 40, 1, 3]")
    assert kernels.channel_padding(strip, eff, "fp32") == (pytest.approx(0.625), 0.0)
    # 1e6 FLOPs at 1e11 x 0.5: 20 µs, + 10 µs overhead = 30 µs; over 0.5625 of the lanes 35.556 µs + 10 µs
    args = (CPU, "fp32", "fp32", 1, 0.0, 1)
    assert profile_op_time(body, args[0], EFF, *args[1:]).seconds == pytest.approx(30e-6)
    assert profile_op_time(body, args[0], eff, *args[1:]).seconds == pytest.approx(20e-6 / 0.5625 + 10e-6)
    model = tmp_path / "blocks.py"
    model.write_text(
        "import torch\nfrom torch import nn\n"
        "def build_model():\n"
        "    return nn.Sequential(nn.Conv2d(3, 24, 3, padding=1), nn.ReLU(), nn.Conv2d(24, 40, 3, padding=1),\n"
        "                         nn.Conv2d(40, 40, 3, padding=1, groups=40), nn.Flatten(), nn.Linear(40 * 64, 4))\n"
        "def example_batch(n):\n    return torch.randn(n, 3, 8, 8), torch.randint(0, 4, (n,))\n"
        "def training_step(model, batch):\n"
        "    return nn.functional.cross_entropy(model(batch[0]), batch[1])\n"
    )
    prof = profile_model(model, batch_size=4, device="meta")
    assert_table_is_scalar(prof, CPU, eff, (1, 4, 64))


def test_the_calibration_reads_the_channel_block_off_its_layers():
    from advisor.calibration.overlay import channel_block

    # forward + backward of 3x3 layers, C in = C out, batch 16 at 32x32, one thread of this VM's EPYC (ms):
    # 20, 24 and 32 channels 10.2, 10.7, 16.3 (its backward caught slow); 40 and 48: 23.0, 22.3. Modelled as
    # a·Cp·Kp, the squared log errors left: block 1 (and 4: the same products here) 0.501, 8: 0.270, 16: 0.177,
    # 32 (20 and 24 rounded to 32 out only, 40 and 48 to 64): 1.245
    measured = [(20, 20, 10.156e-3), (24, 24, 10.691e-3), (32, 32, 16.32e-3), (40, 40, 22.951e-3), (48, 48, 22.278e-3)]
    assert channel_block(measured) == 16
    # times that follow the channels themselves: blocks 1 and 4 fit exactly; the smaller is taken
    assert channel_block([(c, c, 1e-6 * c * c) for c in (20, 24, 32, 40, 48)]) == 1
    # an AVX2 library's blocks of 8: 20 runs as 24; 24, 32, 40, 48 as they are
    assert channel_block([(c, c, 1e-6 * (-(-c // 8) * 8) ** 2) for c in (20, 24, 32, 40, 48)]) == 8
    assert channel_block([(24, 24, 1e-3), (32, 32, 1e-3)]) is None  # too few layers to tell


def test_a_wide_pooling_window_costs_its_window_elements_beyond_the_curve(tmp_path):
    """op_window (measured by advisor calibrate): a pooling op's curve is measured on 2 x 2 windows at stride 2;
    a call whose window reads its input more often adds seconds_per_flop for each FLOP (window element) beyond
    the curve's FLOPs per byte. Only an op with a curve of its own takes it. The op table agrees."""
    from advisor.profiler.profile import profile_model

    pool = "aten.max_pool2d_with_indices"
    curve = {pool: [{"min_size": 0, "efficiency": 0.01}]}
    eff = with_(op_curves=curve, op_window={pool: {"flops_per_byte": 0.125, "seconds_per_flop": 2e-9}})
    args = (CPU, "fp32", "fp32", 1, 0.0, 1)
    # the reference window: 1e6 FLOPs over 8e6 B (0.125 a byte): max(1e6 / 1e11, 8e6 / 1e10) = 800 µs at 0.01 =
    # 80 ms, nothing beyond, + 10 µs overhead
    reference = record(op=pool, category="vector", flops=1e6, nbytes=8e6)
    assert profile_op_time(reference, args[0], eff, *args[1:]).seconds == pytest.approx(80.01e-3)
    # 3 x 3 at stride 1: 9e6 FLOPs over 1.6e7 B: 1.6 ms at 0.01 = 160 ms, and 9e6 - 0.125 x 1.6e7 = 7e6 FLOPs
    # beyond at 2 ns = 14 ms: 174 ms + 10 µs; without the window cost 160.01 ms
    wide = record(op=pool, category="vector", flops=9e6, nbytes=1.6e7)
    assert profile_op_time(wide, args[0], eff, *args[1:]).seconds == pytest.approx(174.01e-3)
    assert profile_op_time(wide, args[0], with_(op_curves=curve), *args[1:]).seconds == pytest.approx(160.01e-3)
    # no curve of its own: priced as any vector op (9e6 / (1e11 x 0.1) = 0.9 ms; 1.6e7 / (1e10 x 0.5) = 3.2 ms),
    # the window cost not added
    no_curve = with_(op_window=eff.op_window)
    assert profile_op_time(wide, args[0], no_curve, *args[1:]).seconds == pytest.approx(3.21e-3)
    model = tmp_path / "pools.py"
    model.write_text(
        "import torch\nfrom torch import nn\n"
        "def build_model():\n"
        "    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.MaxPool2d(3, 1, 1), nn.MaxPool2d(2),\n"
        "                         nn.AvgPool2d(3, 2, 1), nn.Flatten(), nn.Linear(8 * 4 * 4, 4))\n"
        "def example_batch(n):\n    return torch.randn(n, 3, 16, 16), torch.randint(0, 4, (n,))\n"
        "def training_step(model, batch):\n"
        "    return nn.functional.cross_entropy(model(batch[0]), batch[1])\n"
    )
    prof = profile_model(model, batch_size=4, device="meta")
    ops = {o.op for o in prof.ops}
    assert {pool, "aten.avg_pool2d", "aten.avg_pool2d_backward"} <= ops
    curves = {op: [{"min_size": 0, "efficiency": 0.02}, {"min_size": 1e5, "efficiency": 0.01}] for op in ops}
    windows = {op: {"flops_per_byte": 0.1, "seconds_per_flop": 1e-9} for op in ops if "pool" in op}
    assert_table_is_scalar(prof, CPU, with_(op_curves=curves, op_window=windows), (1, 4, 64))


def test_the_calibration_prices_window_elements_from_a_wide_window():
    """overlay.op_windows: the wide-window call less what the op's curve gives it, over its FLOPs beyond the
    reference calls' FLOPs per byte."""
    from advisor.calibration.bench import Measurements
    from advisor.calibration.overlay import op_windows

    pool = "aten.max_pool2d_with_indices"
    m = Measurements(device="cpu", name="Fake CPU", threads=1, dispatch_s=1e-6)
    m.ops = {pool: [(1e5, 7e5, 1e-3), (1e6, 7e6, 9e-3)], "aten.avg_pool2d": [(1e6, 5e6, 1e-3)]}
    # wide: 9e6 FLOPs, 1.6e7 B, 174 ms + the 1 µs dispatch
    m.windows = {pool: (9e6, 1.6e7, 0.174 + 1e-6), "aten.avg_pool2d": (1e6, 1e7, 1e-3)}
    curves = {pool: [{"min_size": 0, "efficiency": 0.01}], "aten.avg_pool2d": [{"min_size": 0, "efficiency": 0.5}]}
    out = op_windows(m, curves, 1e11, 1e10)
    # reference ratio 1e5 / 7e5 = 1e6 / 7e6 = 1/7; the curve gives max(9e6 / 1e11, 1.6e7 / 1e10) / 0.01 = 160 ms;
    # beyond: 9e6 - 1.6e7 / 7 = 6.7143e6 FLOPs; (174 - 160) ms / 6.7143e6 = 2.0851e-9 s a FLOP
    assert out[pool] == {"flops_per_byte": 0.1429, "seconds_per_flop": pytest.approx(2.085e-9)}
    # avg_pool2d's wide call has fewer FLOPs a byte (0.1) than its reference (0.2): nothing beyond, no entry
    assert "aten.avg_pool2d" not in out
    # a wide call faster than its curve says costs nothing more
    m.windows = {pool: (9e6, 1.6e7, 0.1)}
    assert op_windows(m, curves, 1e11, 1e10)[pool]["seconds_per_flop"] == 0.0
    m.ops = {}  # no reference calls: no window cost
    assert op_windows(m, curves, 1e11, 1e10) == {}


def test_the_calibration_pools_3d_volumes_as_the_profile_counts_them():
    """ops.pool_call on 4,096 elements: (1, 4, 4, 16, 16) in, 2 x 2 x 2 windows at stride 2 -> (1, 4, 2, 8, 8),
    512 outputs x 8 window elements = 4,096 FLOPs (formulas_nn.max_pool); the backward scatters 512."""
    from advisor.calibration.ops import REFERENCE_WINDOW, WIDE_WINDOW, _counted, ncdhw, pool_call

    assert ncdhw(4096) == (1, 4, 4, 16, 16)
    forward = _counted(pool_call("cpu", "aten.max_pool3d_with_indices", 4096, REFERENCE_WINDOW))
    assert [(op, f) for op, f, *_ in forward] == [("aten.max_pool3d_with_indices", 4096.0)]
    backward = _counted(pool_call("cpu", "aten.max_pool3d_with_indices_backward", 4096, REFERENCE_WINDOW))
    assert ("aten.max_pool3d_with_indices_backward", 512.0) in [(op, f) for op, f, *_ in backward]
    # 3 x 3 x 3 at stride 1, padded: 4,096 outputs x 27 = 110,592; an average adds one divide an output
    wide = _counted(pool_call("cpu", "aten.avg_pool3d", 4096, WIDE_WINDOW))
    assert [(op, f) for op, f, *_ in wide] == [("aten.avg_pool3d", 4096.0 * 28)]


def test_a_draw_costs_more_the_nearer_its_probability_is_to_one_half():
    """A CPU's bernoulli_ branches on each draw: the curve is measured at p = 0.9 (min(p, 1 - p) = 0.1), the
    calibrated ratio at p = 0.5 fixes the line through it."""
    eff = with_(draw_half_ratio={"aten.bernoulli_": 2.0})

    def draw(p):
        return record("aten.bernoulli_", category="memory", nbytes=1e6, probability=p)

    # q = 0.2 (dropout 0.2): 1 + (2 - 1) x (0.2 - 0.1) / (0.5 - 0.1) = 1.25; q = 0.3 either side: 1.5
    assert kernels.draw_factor(draw(0.8), eff) == pytest.approx(1.25)
    assert kernels.draw_factor(draw(0.3), eff) == pytest.approx(1.5)
    assert kernels.draw_factor(draw(0.7), eff) == pytest.approx(1.5)
    # the curve's own probability: 1; p = 1 (q = 0): 1 - 0.1 / 0.4 = 0.75
    assert kernels.draw_factor(draw(0.9), eff) == pytest.approx(1.0)
    assert kernels.draw_factor(draw(1.0), eff) == pytest.approx(0.75)
    # a steep line would go below zero at q = 0 (1 - 4 x 0.25 = 0): held at DRAW_FLOOR
    assert kernels.draw_factor(draw(1.0), with_(draw_half_ratio={"aten.bernoulli_": 5.0})) == kernels.DRAW_FLOOR
    # unknown probability, no calibrated ratio, another op: 1
    assert kernels.draw_factor(draw(None), eff) == 1.0
    assert kernels.draw_factor(draw(0.5), EFF) == 1.0
    assert kernels.draw_factor(record("aten.mul", category="memory", nbytes=1e6, probability=0.5), eff) == 1.0
    # the op's curve sets its time: 1e6 B at 1e10 B/s is 100 µs, over efficiency 0.1: 1 ms (+ 10 µs overhead);
    # at p = 0.5 the curve's time doubles: 2 ms + 10 µs; at 0.8, 1.25 ms + 10 µs
    eff = with_(
        draw_half_ratio={"aten.bernoulli_": 2.0}, op_curves={"aten.bernoulli_": [{"min_size": 0, "efficiency": 0.1}]}
    )
    seconds = [profile_op_time(draw(p), CPU, eff, "fp32", "fp32", 1).seconds for p in (0.9, 0.5, 0.8)]
    assert seconds == pytest.approx([1.01e-3, 2.01e-3, 1.26e-3])


def test_a_profile_records_each_draws_probability_and_the_op_table_scales_it(tmp_path):
    """Dropout's keep probability reaches the profile: on a CPU as bernoulli_'s p (including 0.5, which the
    dispatcher passes as the argument's default, left out), on meta as one less native_dropout's p."""
    from advisor.profiler.profile import profile_model

    model = tmp_path / "drops.py"
    model.write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "def build_model():\n"
        "    return nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.3), nn.Linear(8, 8), nn.Dropout(0.5))\n\n\n"
        "def example_batch(batch_size):\n    return torch.randn(batch_size, 8)\n\n\n"
        "def training_step(model, batch):\n    return model(batch).sum()\n"
    )
    cpu = profile_model(model, batch_size=2, device="cpu", repeats=0, faults=False)
    # (repeated layers' module paths are written '*': the probability tells the two apart)
    assert sorted(o.probability for o in cpu.ops if o.op == "aten.bernoulli_") == [0.5, pytest.approx(0.7)]
    meta = profile_model(model, batch_size=2, device="meta")
    assert sorted(o.probability for o in meta.ops if o.op == "aten.native_dropout") == [0.5, pytest.approx(0.7)]
    curve = [{"min_size": 0, "efficiency": 0.1}]
    eff = with_(
        draw_half_ratio={"aten.bernoulli_": 2.0, "aten.native_dropout": 3.0},
        op_curves={"aten.bernoulli_": curve, "aten.native_dropout": curve},
    )
    for prof in (cpu, meta):
        got, want, _ = table_and_scalar(prof, eff)
        assert got == pytest.approx(want, rel=1e-9)
    # the vectorized table against the scalar reference above; and against the draws' hand-derived factors:
    # the second dropout (p = 0.5) costs its curve's time x 3 on meta, the first x (1 + 2 x 0.2 / 0.4) = 2
    no_ratio = with_(op_curves=eff.op_curves)
    base, _, _ = table_and_scalar(meta, no_ratio)
    got, _, _ = table_and_scalar(meta, eff)
    rows = {round(o.probability, 6): i for i, o in enumerate(meta.ops) if o.op == "aten.native_dropout"}
    overhead = 10e-6  # one call each
    assert got[rows[0.5]] - overhead == pytest.approx(3.0 * (base[rows[0.5]] - overhead))
    assert got[rows[0.7]] - overhead == pytest.approx(2.0 * (base[rows[0.7]] - overhead))


def test_the_optimizer_phase_pays_its_fixed_cost_per_step_by_the_steps_bytes():
    """Efficiency.optimizer_step: once per step, log-linear in the step's bytes between the points, the end points'
    values beyond; the op table adds it to the optimizer phase of a CPU's estimate (not a GPU's)."""
    from estimator_fixtures import toy_profile

    from advisor import api
    from advisor.catalog.schema import Catalog
    from advisor.estimator.roofline import optimizer_step_s

    points = [{"step_bytes": 1e6, "seconds": 1e-4}, {"step_bytes": 1e8, "seconds": 5e-4}]
    eff = with_(optimizer_step=points)
    # 1e7 bytes is halfway between 1e6 and 1e8 in log: 1e-4 + 0.5 x 4e-4 = 3e-4; 1e5 and 1e9: the end points
    assert optimizer_step_s(eff, 1e7) == pytest.approx(3e-4)
    assert optimizer_step_s(eff, 1e5) == pytest.approx(1e-4)
    assert optimizer_step_s(eff, 1e9) == pytest.approx(5e-4)
    assert optimizer_step_s(EFF, 1e7) == 0.0
    # with a cost per byte of the optimizer's data (1e-11 and 3e-11 s at the two points), 1e7 bytes of it at the
    # same step: each point 1e-4 + 1e-4 = 2e-4 and 5e-4 + 3e-4 = 8e-4 s, halfway 5e-4
    per_byte = [{**points[0], "seconds_per_byte": 1e-11}, {**points[1], "seconds_per_byte": 3e-11}]
    assert optimizer_step_s(with_(optimizer_step=per_byte), 1e7, 1e7) == pytest.approx(5e-4)
    assert optimizer_step_s(with_(optimizer_step=per_byte), 1e7) == pytest.approx(3e-4)  # no data, as before
    with pytest.raises(ValueError, match="increasing step_bytes"):
        with_(optimizer_step=points[::-1])
    # in an estimate: the toy profile's step moves prof.bytes(8) bytes; its optimizer phase grows by exactly the
    # figure at that size on the CPU, and not at all on a GPU of the same efficiency family
    prof = toy_profile()
    moved = prof.bytes(8)
    phases = {}
    for kind in ("cpu", "gpu"):
        gpu = {"kind": "gpu", "software_stack": "cuda", "memory_bytes": 1e11, "cores": None, "threads_per_core": None}
        device = Device.model_validate({**CPU.model_dump(), **gpu}) if kind == "gpu" else CPU
        for name, family in (("without", EFF), ("with", eff), ("per byte", with_(optimizer_step=per_byte))):
            cat = Catalog(devices={device.id: device}, efficiency={"toy": family}, instances={})
            est = api.estimate(prof, device.id, precision="fp32", micro_batch=8, global_batch=8, cat=cat)
            phases[kind, name] = est.phases["optimizer"].seconds
    assert phases["cpu", "with"] - phases["cpu", "without"] == pytest.approx(optimizer_step_s(eff, moved))
    # per byte: the optimizer's data, the gradients twice (they and the parameters they update) and the state
    data = 2 * prof.memory.gradient_bytes + prof.memory.optimizer_state_bytes
    assert data > 0
    spb = optimizer_step_s(with_(optimizer_step=per_byte), moved, 1.0) - optimizer_step_s(eff, moved)
    assert phases["cpu", "per byte"] - phases["cpu", "with"] == pytest.approx(spb * data)
    assert phases["gpu", "with"] == pytest.approx(phases["gpu", "without"])


def test_a_cpu_kernel_converts_inputs_of_another_dtype_first(tmp_path):
    """PyTorch's CPU kernels convert every input of another dtype than the op computes in before running
    (TensorIterator: input.to(common_dtype)); CUDA kernels cast as they load. The profile records each such
    conversion as an aten._to_copy with the layout 'cpu_cast', reading and writing the converted size; the
    estimate costs it on a CPU only, the same in the scalar op cost and the vectorized op table."""
    import numpy as np

    from advisor import api
    from advisor.estimator.parallel.tensor import roles
    from advisor.estimator.passes import op_table, record_times
    from advisor.estimator.roofline import profile_times
    from advisor.profiler.profile import profile_model
    from advisor.vocab import CPU_CAST

    model = tmp_path / "amax_pool.py"
    model.write_text(
        "import torch\n\n\n"
        "def build_model():\n    return torch.nn.Linear(16, 16)\n\n\n"
        "def example_batch(batch_size):\n    return torch.randn(batch_size, 4, 16)\n\n\n"
        "def training_step(model, batch):\n    return model(batch).amax(dim=2).sum()\n"
    )
    prof = profile_model(model, batch_size=2, device="meta")
    casts = [o for o in prof.ops if o.layout == CPU_CAST]
    # amax's backward is (g / mask.sum(2, keepdim=True)) * mask with mask = (y == amax), bools [2, 4, 16]:
    # - the sum converts the mask to int64 first: 2 x 4 x 16 x 8 B = 1,024 B, 512 B a sample, read and written
    # - the division converts the int64 count [2, 4, 1] to fp32: 8 x 4 B = 32 B, 16 B a sample
    # - the product converts the mask to fp32: 128 x 4 B = 512 B, 256 B a sample
    got = [(o.op, o.phase, o.shapes, o.dtype, o.bytes_read.per_sample, o.bytes_written.per_sample) for o in casts]
    assert got == [
        ("aten._to_copy", "backward", "[2, 4, 16]", "int64", 512.0, 512.0),
        ("aten._to_copy", "backward", "[2, 4, 1]", "fp32", 16.0, 16.0),
        ("aten._to_copy", "backward", "[2, 4, 16]", "fp32", 256.0, 256.0),
    ]
    # the forward's fp32 ops and the eq of two fp32 tensors (a bool out) convert nothing
    assert all(o.phase == "backward" for o in casts)

    # the CPU fixture at micro-batch 10: 2 x 5,120 B at 0.5 of 1e10 B/s = 2.048 µs + the 10 µs fixed cost
    first = profile_op_time(casts[0], CPU, EFF, prof.precision, "fp32", 10, prof.bytes(10), prof.batch_size)
    assert first.seconds == pytest.approx(2 * 5120 / 5e9 + 10e-6, rel=1e-9)
    cpu_times = [t for _, t in profile_times(prof, CPU, EFF, "fp32", 10)]
    got, want, _ = table_and_scalar(prof, EFF, batch=10)
    assert got == pytest.approx(want, rel=1e-12)  # on a CPU every record costs what its scalar cost says

    cat = api.catalog()
    gpu = cat.devices["h100-sxm"]
    eff = cat.efficiency[gpu.efficiency]
    table = op_table(prof, roles(prof, prof.structure), gpu, eff, "fp32")
    seconds = record_times(table, [10], [1], [1], [False])["seconds"][0]
    is_cast = np.array([o.layout == CPU_CAST for o in prof.ops])
    assert (seconds[is_cast] == 0).all() and (seconds[~is_cast] > 0).all()
    # the scalar reference leaves the three conversions out on the GPU, and keeps them on the CPU
    assert len(profile_times(prof, gpu, eff, "fp32", 10)) == len(cpu_times) - 3


def test_a_cpu_convolution_on_nchw_tensors_pays_onednns_layout_reorders_at_their_size(tmp_path):
    """conv_reorder (measured by advisor calibrate): oneDNN runs a convolution on plain NCHW tensors in its
    channel-blocked layout, so each call reorders its input in and its output back, each pass reading the plain
    tensor and writing the blocked one padded to whole blocks of 16, at a rate by the pass's own bytes (aligned and
    padded channels apart). The scalar op cost and the vectorized op table agree."""
    from advisor.profiler.profile import profile_model

    eff = with_(
        conv_channel_block=16,
        conv_reorder={"aligned": [{"min_size": 0, "efficiency": 0.5}], "padded": [{"min_size": 0, "efficiency": 0.25}]},
    )
    # a ShuffleNet depthwise layer, 58 channels at 64x64, batch 32: x = y = 32·58·4096 = 7,602,176 elements; FLOPs
    # 2 x y x (1·3·3) = 136,839,168. A pass moves 4 B x 7,602,176 x (58 + 64) / 58 = 63,963,136 bytes, both padded.
    dw = record(op="aten.convolution", flops=136_839_168 / 32, shapes="[32, 58, 64, 64], [58, 1, 3, 3]")
    assert kernels.reorder_passes(dw, eff, "fp32", 32) == [(63_963_136, 1, True), (63_963_136, 1, True)]
    # each at 1e10 B/s x 0.25: 25.585 ms, two passes 51.171 ms on top of what the layer costs without them
    plain = profile_op_time(dw, CPU, with_(conv_channel_block=16), "fp32", "fp32", 32, 0.0, 32).seconds
    assert profile_op_time(dw, CPU, eff, "fp32", "fp32", 32, 0.0, 32).seconds == pytest.approx(plain + 51.1705088e-3)
    # at batch 64 each pass is twice as large, so twice as long (the curves are flat here); the layer's own work too
    plain64 = profile_op_time(dw, CPU, with_(conv_channel_block=16), "fp32", "fp32", 64, 0.0, 32).seconds
    assert profile_op_time(dw, CPU, eff, "fp32", "fp32", 64, 0.0, 32).seconds == pytest.approx(plain64 + 102.3410176e-3)
    # a 1x1 layer 64 -> 58 at 16x16, batch 8, with a bias: x = 131,072 elements, y = 118,784; FLOPs 2 x y x 64 + y.
    # Input pass 4 x 131,072 x (64 + 64) / 64 = 1,048,576 B, aligned; output 4 x 118,784 x 122 / 58 = 999,424 B, padded
    pw = record(
        op="aten.convolution", flops=(2 * 118_784 * 64 + 118_784) / 8, shapes="[8, 64, 16, 16], [58, 64, 1, 1], [58]"
    )
    assert kernels.reorder_passes(pw, eff, "fp32", 8) == [(1_048_576, 1, False), (999_424, 1, True)]
    # its backward, both gradients (FLOPs 2 x 2 x y x 64): the output gradient in twice, the input in and its
    # gradient out; with the weight gradient alone (FLOPs 2 x y x 64) the input comes in once
    back = record(
        op="aten.convolution_backward",
        flops=4 * 118_784 * 64 / 8,
        shapes="[8, 58, 16, 16], [8, 64, 16, 16], [58, 64, 1, 1]",
    )
    assert kernels.reorder_passes(back, eff, "fp32", 8) == [(1_048_576, 2, False), (999_424, 2, True)]
    weights = back.model_copy(update={"flops": Linear(per_sample=2 * 118_784 * 64 / 8)})
    assert kernels.reorder_passes(weights, eff, "fp32", 8) == [(1_048_576, 1, False), (999_424, 2, True)]
    # 1,048,576 x 2 / (1e10 x 0.5) + 999,424 x 2 / (1e10 x 0.25) = 0.41943 + 0.79954 ms
    assert kernels.reorder_s(kernels.reorder_passes(back, eff, "fp32", 8), 1e10, eff.conv_reorder) == pytest.approx(
        1.2189696e-3
    )
    # a calibration that measured one kind of channel count prices the other by it
    only = {"aligned": eff.conv_reorder["aligned"]}
    assert kernels.reorder_curve(only, True) is kernels.reorder_curve(only, False) is only["aligned"]
    # a stem's 3 channels under a spatial kernel are read as they are: only its 16-channel output goes back,
    # 4 x 16·16·1024 x 2 = 131,072 x 8 bytes (y from FLOPs 2 x y x 27)
    stem = record(op="aten.convolution", flops=2 * 16_384 * 27, shapes="[1, 3, 32, 32], [16, 3, 3, 3]")
    assert kernels.reorder_passes(stem, eff, "fp32", 1) == [(131_072, 1, False)]
    # none for a channels-last layer (NHWC kernels), a transposed one (its own curves), nor a family without the data
    assert kernels.reorder_passes(dw.model_copy(update={"layout": "channels_last"}), eff, "fp32", 32) == []
    assert kernels.reorder_passes(dw.model_copy(update={"transposed": True}), eff, "fp32", 32) == []
    assert kernels.reorder_passes(dw, with_(conv_channel_block=16), "fp32", 32) == []
    assert kernels.reorder_passes(record(op="aten.mm", flops=1e6, shapes="[8, 8], [8, 8]"), eff, "fp32", 1) == []
    model = tmp_path / "shuffle.py"
    model.write_text(
        "import torch\nfrom torch import nn\n"
        "def build_model():\n"
        "    return nn.Sequential(nn.Conv2d(3, 24, 3, padding=1), nn.Conv2d(24, 58, 1),\n"
        "                         nn.Conv2d(58, 58, 3, stride=2, padding=1, groups=58), nn.Flatten(),\n"
        "                         nn.Linear(58 * 16, 4))\n"
        "def example_batch(n):\n    return torch.randn(n, 3, 8, 8), torch.randint(0, 4, (n,))\n"
        "def training_step(model, batch):\n"
        "    return nn.functional.cross_entropy(model(batch[0]), batch[1])\n"
    )
    prof = profile_model(model, batch_size=4, device="meta")
    assert any(kernels.reorder_passes(o, eff, "fp32", 4) for o in prof.ops)
    assert_table_is_scalar(prof, CPU, eff, (1, 4, 64))


def test_a_copy_between_layouts_records_the_runs_both_sides_share():
    """counter.copy_run: elements per run contiguous in both the source's and the target's strides."""
    from advisor.profiler.counter import contiguous_strides, copy_run

    # a mixer's token mixing: [8, 64, 96] transposed to [8, 96, 64] and made contiguous: the innermost dimension
    # (stride 1 in the target) has stride 96 in the source: runs of 1
    assert copy_run((8, 96, 64), (6144, 1, 96), contiguous_strides((8, 96, 64))) == 1
    assert contiguous_strides((8, 96, 64)) == (6144, 64, 1)
    # attention heads: [B, T, H, D] = [2, 8, 4, 16] viewed as [2, 4, 8, 16] (strides 512, 16, 64, 1) made
    # contiguous (512, 128, 16, 1): the head dimension is contiguous on both sides, the next one is not: 16
    assert copy_run((2, 4, 8, 16), (512, 16, 64, 1), (512, 128, 16, 1)) == 16
    # [3, 2, 4, 5] with its two outer dimensions swapped: [2, 3, 4, 5] at (20, 40, 5, 1) into (60, 20, 5, 1): the
    # inner 4 x 5 = 20 elements are one run on both sides
    assert copy_run((2, 3, 4, 5), (20, 40, 5, 1), (60, 20, 5, 1)) == 20
    # the same layout, a broadcast source, a copy contiguous on both sides up to size-1 dimensions: no record
    assert copy_run((8, 96, 64), (6144, 64, 1), (6144, 64, 1)) is None
    assert copy_run((8, 96, 64), (0, 64, 1), (6144, 64, 1)) is None
    assert copy_run((1, 96, 64), (7, 64, 1), (6144, 64, 1)) is None


def test_a_copy_between_layouts_costs_its_measured_ratio_by_run(tmp_path):
    """A transposing copy (a clone of a transposed view, the copy a LayerNorm makes of a permuted input) takes the
    calibrated ratio to a plain copy at its run; other copies and families without the ratio pay none."""
    from advisor.profiler.profile import profile_model

    eff = with_(permuted_copy=[{"run": 1, "ratio": 8.0}, {"run": 16, "ratio": 2.0}, {"run": 256, "ratio": 1.2}])

    def clone(run):
        return record("aten.clone", category="memory", nbytes=1e6, copy_run=run)

    # between the points straight on a log scale of runs: run 4 is half way from 1 to 16, 8 + 0.5 x (2 - 8) = 5;
    # the end points' ratios below and beyond them
    factors = [kernels.copy_factor(clone(run), eff) for run in (1, 4, 16, 1000, None)]
    assert factors == pytest.approx([8.0, 5.0, 2.0, 1.2, 1.0])
    assert kernels.copy_factor(clone(1), EFF) == 1.0
    # 1e6 B at 0.5 x 1e10 B/s: 200 µs plainly, x 8 in runs of 1 (+ 10 µs overhead each); on the op's own curve
    # (0.1: 1 ms) the same ratio: 8 ms
    seconds = [profile_op_time(clone(run), CPU, eff, "fp32", "fp32", 1).seconds for run in (None, 1)]
    assert seconds == pytest.approx([210e-6, 1.61e-3])
    own = with_(permuted_copy=eff.permuted_copy, op_curves={"aten.clone": [{"min_size": 0, "efficiency": 0.1}]})
    assert profile_op_time(clone(1), CPU, own, "fp32", "fp32", 1).seconds == pytest.approx(8.01e-3)

    model = tmp_path / "layouts.py"
    model.write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.norm, self.mix = nn.LayerNorm(8), nn.Linear(16, 16)\n\n"
        "    def forward(self, x):\n"
        "        y = self.norm(x.permute(0, 2, 3, 1))\n"  # [B, 4, 4, 8] of [B, 8, 4, 4]: the norm copies it
        "        z = y.reshape(-1, 16, 8).transpose(1, 2).contiguous()\n"  # a transposing clone
        "        h = x.reshape(-1, 8, 2, 8).transpose(1, 2).contiguous()\n"  # runs of 8: heads permuted
        "        return self.mix(z).sum() + h.sum()\n\n\n"
        "def build_model():\n    return Net()\n\n\n"
        "def example_batch(batch_size):\n    return torch.randn(batch_size, 8, 4, 4, requires_grad=True)\n\n\n"
        "def training_step(model, batch):\n    return model(batch)\n"
    )
    prof = profile_model(model, batch_size=2, device="meta")
    runs = sorted((o.op, o.phase, o.copy_run) for o in prof.ops if o.copy_run is not None)
    assert ("aten.native_layer_norm", "forward", 1) in runs
    assert ("aten.clone", "forward", 1) in runs and ("aten.clone", "forward", 8) in runs
    norm = next(o for o in prof.ops if o.op == "aten.native_layer_norm")
    # [2, 4, 4, 8] fp32 read and written once, 1,024 B a sample, priced as 8 times the bytes of a plain copy
    assert kernels.strided_copy_bytes(norm, "fp32", 2, eff) == 8 * 1024.0
    # the vectorized op table prices every record as the scalar reference does, the norm's copy included
    got, want, _ = table_and_scalar(prof, eff)
    assert got == pytest.approx(want, rel=1e-9)
    base, _, _ = table_and_scalar(prof, EFF)
    i = prof.ops.index(norm)
    assert got[i] > base[i]
