"""Recurrent layers as the device's library runs them: one fused kernel sequence per layer and direction
(cuDNN on NVIDIA GPUs, oneDNN for LSTMs on CPUs) instead of the dozen small ops per time step that the
meta device's decomposition records.

Per layer and direction, with T steps, B rows, gates g (LSTM 4, GRU 3, plain RNN 1), hidden H, output P
(H, or the projection) and layer input I:
- forward: one GEMM for all steps' input projections (T·B x I by I x gH), then T recurrent GEMMs
  (B x P by P x gH) each followed by the fused gate kernel (the cell's elementwise work);
- backward: T recurrent data-gradient GEMMs (B x gH by gH x P) and gate kernels, then one GEMM for the
  input gradient and two for the weight gradients over all steps at once.
Each GEMM is costed by the roofline (size, shape and wave efficiency); each kernel launch inside the
library costs `launch_s`, the layer call one eager op.
"""

from __future__ import annotations

from advisor.catalog.schema import Device, Efficiency
from advisor.profiler.schema import Profile, RnnCall
from advisor.vocab import COMPUTE_DTYPE, DTYPE_BYTES

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
CELL_FLOPS = {"LSTM": 30, "GRU": 24, "RNN_TANH": 4, "RNN_RELU": 4}  # per row and hidden unit (formulas_nn)


def replaced_modules(profile: Profile, eff: Efficiency, cpu: bool = False) -> set[str]:
    """Module patterns whose recorded ops a fused kernel sequence replaces on this family: recurrent layers of a
    mode the library fuses, whatever the profile recorded for them (the meta device's decomposition, or a GPU
    library's single op, whose FLOPs and bytes say nothing of the step-by-step launches inside it). On a CPU
    (`cpu`) the oneDNN op a CPU profile recorded stays: the calibrated curves price it as measured."""
    modules = {r.module for r in profile.rnns if r.mode in eff.fused_rnn}
    if cpu:
        modules -= {o.module for o in profile.ops if "mkldnn_rnn" in o.op}
    return modules


def recurrent_modules(profile: Profile, eff: Efficiency, cpu: bool = False) -> set[str]:
    """Recurrent layers this family runs step by step: recorded as per-step ops (not as a library's fused op)
    and not replaced by a fused kernel here. Their GEMMs reuse the same weights at every step."""
    recorded_fused = {o.module for o in profile.ops if "rnn" in o.op or "lstm" in o.op}
    return {r.module for r in profile.rnns} - replaced_modules(profile, eff, cpu) - recorded_fused


def _gemm(device, eff, m, n, k, width, dtype, count, phase):
    from advisor.estimator.roofline import op_time

    flops = 2.0 * m * n * k * count
    nbytes = width * (m * k + k * n + m * n) * count
    return op_time(device, eff, flops, nbytes, count, "matrix", dtype, phase=None, op="aten.mm")


def _cell(device, eff, rnn: RnnCall, rows, width, dtype, steps):
    from advisor.estimator.roofline import op_time

    g, h = GATES[rnn.mode], rnn.hidden_size
    flops = CELL_FLOPS[rnn.mode] * rows * h * steps
    nbytes = width * rows * h * (g + 4) * steps  # gate pre-activations and the cell state in, h and c out
    return op_time(device, eff, flops, nbytes, steps, "vector", dtype, phase=None, op="aten.rnn_cell")


def rnn_times(rnn: RnnCall, device: Device, eff: Efficiency, precision: str, batch: float) -> dict[str, list]:
    """{phase: [OpTime, ...]} of all calls of one recurrent layer at micro-batch `batch`."""
    from advisor.estimator.roofline import launch_for, op_time, overhead_for

    dtype = COMPUTE_DTYPE[precision]
    width = DTYPE_BYTES.get(dtype, 4)
    rows, steps, g = max(1.0, rnn.rows.at(batch)), rnn.steps, GATES[rnn.mode]
    h = rnn.hidden_size
    p = rnn.proj_size or h
    out: dict[str, list] = {"forward": [], "backward": []}
    for layer in range(rnn.layers):
        inp = rnn.input_size if layer == 0 else p * rnn.directions
        for _ in range(rnn.directions):
            fwd = [
                _gemm(device, eff, steps * rows, g * h, inp, width, dtype, 1, "forward"),
                _gemm(device, eff, rows, g * h, p, width, dtype, steps, "forward"),
                _cell(device, eff, rnn, rows, width, dtype, steps),
            ]
            bwd = [
                _gemm(device, eff, rows, p, g * h, width, dtype, steps, "backward"),
                _cell(device, eff, rnn, rows, width, dtype, 2 * steps),
                _gemm(device, eff, steps * rows, inp, g * h, width, dtype, 1, "backward"),
                _gemm(device, eff, inp, g * h, steps * rows, width, dtype, 1, "backward"),
                _gemm(device, eff, p, g * h, steps * rows, width, dtype, 1, "backward"),
            ]
            out["forward"] += [_scaled(t, rnn.count) for t in fwd]
            out["backward"] += [_scaled(t, rnn.count) for t in bwd]
    launch = launch_for(eff)
    for phase, kernels in (("forward", 2 * steps + 1), ("backward", 2 * steps + 3)):
        # the library's own launches inside the call, and the eager op that calls it
        fixed = rnn.count * (rnn.layers * rnn.directions * kernels * launch + overhead_for(eff, phase))
        call = op_time(device, eff, 0.0, 0.0, 1, "memory", dtype, phase=None, op=None, fixed_s=fixed)
        call.host_calls = rnn.count  # one eager op per call
        out[phase].append(call)
    return out


def _scaled(t, factor: int):
    from dataclasses import replace

    if factor == 1:
        return t
    return replace(
        t,
        seconds=t.seconds * factor,
        compute_s=t.compute_s * factor,
        memory_s=t.memory_s * factor,
        overhead_s=t.overhead_s * factor,
        flops=t.flops * factor,
        bytes=t.bytes * factor,
    )
