"""A 1x1 convolution PyTorch runs on its native kernel (issue 10, "estimate what the device really runs"): on one
CPU thread, under 16 samples a call, PyTorch's backend choice (ConvUtils.h, use_mkldnn) hands an unstrided fp32 1x1
layer to slow_conv2d, which runs one GEMM a sample and none of oneDNN's layout reorders or primitive set-up. Every
expected value is derived by hand in the comment beside it."""

from __future__ import annotations

import pytest
from test_op_costs import CPU, table_and_scalar, with_

from advisor.estimator import kernels
from advisor.estimator.roofline import profile_op_time
from advisor.profiler.schema import Linear, OpRecord

ONE = with_(conv_channel_block=16, calibration_threads=1)  # a oneDNN CPU calibrated at one thread

# a 1x1 layer of 64 channels into 32 at 32x32, batch 8, with bias: per call 2·8·32·1024·64 = 33,554,432 FLOPs of
# products plus 8·32·1024 = 262,144 bias adds: 33,816,576, 4,227,072 a sample
FORWARD_FLOPS = 4_227_072


def conv(
    op="aten.convolution",
    shapes="[8, 64, 32, 32], [32, 64, 1, 1], [32]",
    flops=FORWARD_FLOPS,
    **kw,
) -> OpRecord:
    return OpRecord(
        op=op,
        phase=kw.pop("phase", "backward" if op == "aten.convolution_backward" else "forward"),
        category="matrix",
        dtype=kw.pop("dtype", "fp32"),
        module="net.0",
        count=1,
        flops=Linear(per_sample=flops),
        bytes_read=Linear(fixed=4 * (2048 + 32), per_sample=4 * 64 * 1024),  # weight and bias; the input
        bytes_written=Linear(per_sample=4 * 32 * 1024),
        shapes=shapes,
        **kw,
    )


# its backward with the input gradient: two convolutions' products, 2 x 33,554,432 / 8 = 8,388,608 a sample
BACKWARD = dict(op="aten.convolution_backward", shapes="[8, 32, 32, 32], [8, 64, 32, 32], [32, 64, 1, 1]")


def test_which_convolutions_run_on_the_native_kernel():
    # (input channels, output channels, spatial elements, samples a call, bias, input gradient)
    assert kernels.native_conv(conv(), ONE, "fp32", 8) == (64, 32, 1024, 8.0, True, False)
    assert kernels.native_conv(conv(**BACKWARD, flops=8_388_608), ONE, "fp32", 8) == (64, 32, 1024, 8.0, False, True)
    # the first layer's backward computes no input gradient: half the FLOPs
    assert kernels.native_conv(conv(**BACKWARD, flops=4_194_304), ONE, "fp32", 8)[5] is False
    # two threads, a CPU without oneDNN's blocked layouts, or a 16-bit layer: oneDNN (or no rule)
    assert kernels.native_conv(conv(), with_(conv_channel_block=16, calibration_threads=2), "fp32", 8) is None
    assert kernels.native_conv(conv(), with_(calibration_threads=1), "fp32", 8) is None
    assert kernels.native_conv(conv(), ONE, "bf16", 8) is None
    # a 3x3 kernel (9 times the products), a stride-2 1x1 layer (a quarter of the output), a grouped one (64
    # channels in, a weight of 32 a group) and a channels-last one: all on oneDNN
    wide = conv(shapes="[8, 64, 32, 32], [32, 64, 3, 3], [32]", flops=37_781_504)
    assert kernels.native_conv(wide, ONE, "fp32", 8) is None
    assert kernels.native_conv(conv(flops=FORWARD_FLOPS / 4), ONE, "fp32", 8) is None
    assert kernels.native_conv(conv(shapes="[8, 64, 32, 32], [32, 32, 1, 1], [32]"), ONE, "fp32", 8) is None
    assert kernels.native_conv(conv(layout="channels_last"), ONE, "fp32", 8) is None


def test_the_native_kernel_runs_one_gemm_a_sample():
    (fwd,) = kernels.native_gemms(conv(), ONE, "fp32", 8, 8)
    # W[32 x 64] · x[64 x 1024] for each of the 8 samples, into an output filled with the bias first (an addmm)
    assert (fwd.op, fwd.count, fwd.shapes) == ("aten.addmm", 8, "[32, 1024], [32, 64], [64, 1024]")
    assert kernels.gemm_layout(fwd) == "forward"
    assert fwd.flops.at(8) == pytest.approx(2 * 32 * 64 * 1024 * 8)  # 33,554,432
    assert fwd.bytes_read.at(8) == pytest.approx(4 * (32 * 64 + 64 * 1024) * 8)  # 2,162,688
    assert fwd.bytes_written.at(8) == pytest.approx(4 * 32 * 1024 * 8)  # 1,048,576
    # the samples of a call follow the micro-batch: a profile at 32 estimated at 15 runs 15 GEMMs a call, at 16 none
    at32 = conv(shapes="[32, 64, 32, 32], [32, 64, 1, 1], [32]")
    assert kernels.native_gemms(at32, ONE, "fp32", 15, 32)[0].count == 15
    assert kernels.native_gemms(at32, ONE, "fp32", 16, 32) == []
    # without a bias, a plain mm
    assert (
        kernels.native_gemms(conv(shapes="[8, 64, 32, 32], [32, 64, 1, 1]", flops=4_194_304), ONE, "fp32", 8, 8)[0].op
        == "aten.mm"
    )
    # backward: Wᵀ[64 x 32] · g[32 x 1024] (input gradient), then g · xᵀ [32 x 1024 by 1024 x 64] (weight gradient)
    grad_in, grad_w = kernels.native_gemms(conv(**BACKWARD, flops=8_388_608), ONE, "fp32", 8, 8)
    assert grad_in.shapes == "[64, 32], [32, 1024]" and grad_w.shapes == "[32, 1024], [1024, 64]"
    assert grad_in.flops.at(8) == grad_w.flops.at(8) == pytest.approx(33_554_432)
    (only_w,) = kernels.native_gemms(conv(**BACKWARD, flops=4_194_304), ONE, "fp32", 8, 8)
    assert only_w.shapes == "[32, 1024], [1024, 64]"


def test_a_native_convolution_costs_its_gemms_and_one_eager_op():
    # each GEMM: 4,194,304 FLOPs at 1e11 x 0.5 = 83.886 µs against (2,162,688 + 1,048,576) / 8 = 401,408 bytes at
    # 1e10 x 0.5 = 80.282 µs: compute-bound; eight of them 671.089 µs, plus one eager op's 10 µs (not eight)
    t = profile_op_time(conv(), CPU, ONE, "fp32", "fp32", 8, 0.0, 8)
    assert t.seconds == pytest.approx(8 * 4_194_304 / 5e10 + 10e-6)  # 681.089 µs
    assert t.overhead_s == pytest.approx(10e-6) and t.host_calls == 1
    # at 15 samples (a profile at 8): 15 x 83.886 + 10 = 1,268.29 µs
    assert profile_op_time(conv(), CPU, ONE, "fp32", "fp32", 15, 0.0, 8).seconds == pytest.approx(
        15 * 4_194_304 / 5e10 + 10e-6
    )
    # at 16 the convolution runs on oneDNN and is priced as before: its 67,633,152 FLOPs at 0.5 of 1e11 = 1,352.66 µs
    # against 8,320 + 16 x (262,144 + 131,072) = 6,299,776 bytes at 5e9 B/s = 1,259.96 µs, plus 10 µs
    assert profile_op_time(conv(), CPU, ONE, "fp32", "fp32", 16, 0.0, 8).seconds == pytest.approx(
        16 * FORWARD_FLOPS / 5e10 + 10e-6
    )
    # the same call on two threads stays on oneDNN at 8 as well: 8 x 4,227,072 / 5e10 + 10 µs = 686.33 µs
    two = with_(conv_channel_block=16, calibration_threads=2)
    assert profile_op_time(conv(), CPU, two, "fp32", "fp32", 8, 0.0, 8).seconds == pytest.approx(
        8 * FORWARD_FLOPS / 5e10 + 10e-6
    )


def test_the_op_table_hands_native_convolutions_to_their_gemms_by_micro_batch():
    """passes.py: under 16 samples a call the records of the shipped MobileNetV2's pointwise layers cost nothing
    themselves and their GEMMs come as extra work, equal to profile_op_time's; from 16 on the records price
    oneDNN as the scalar path does."""
    import numpy as np

    from advisor import api
    from advisor.estimator.passes import native_conv_times

    prof = api.profile_from("mobilenet_v2")  # batch 96
    eff = with_(
        conv_channel_block=16,
        calibration_threads=1,
        conv_by_intensity=[{"min_size": 0, "efficiency": 0.5}],
        conv_backward_by_intensity=[{"min_size": 0, "efficiency": 0.4}],
    )
    native = np.array([kernels.native_conv(o, eff, "fp32", prof.batch_size) is not None for o in prof.ops])
    # 38 of its 57 convolution records: every 1x1 layer (expand, project, the head), forward and backward; not the 17
    # depthwise records or the strided 3x3 stem's two
    assert native.sum() == 38
    got, want, table = table_and_scalar(prof, eff, batch=8)
    assert (table.native[native] == 1.0).all()  # 96 samples a call at the profile's 96
    assert got[native] == pytest.approx(0.0)
    assert got[~native] == pytest.approx(want[~native], rel=1e-12)
    extra = [native_conv_times(o, prof, CPU, eff, "fp32", 8) for o, n in zip(prof.ops, native, strict=True) if n]
    assert sum(t.seconds for e in extra for ts in e.values() for t in ts) == pytest.approx(want[native].sum())
    assert all(t.host_calls == 0 for e in extra for ts in e.values() for t in ts)  # the record counts its op
    got16, want16, _ = table_and_scalar(prof, eff, batch=16)
    assert got16 == pytest.approx(want16, rel=1e-12)
    assert native_conv_times(prof.ops[int(np.argmax(native))], prof, CPU, eff, "fp32", 16) == {}
