"""A toy device, instance and profile with round numbers, so that the estimator's formulas can be checked
by hand in the tests beside them.

Device: bf16 matrix peak 1e14 FLOP/s, fp32 vector 1e13, 1e12 B/s memory bandwidth, 100 GB.
Efficiency: matrix 0.5, vector 0.5, memory 0.8 at every size; 10 µs per op; links at 0.5 of their
peak; collective latency 10 µs; reserve 1 GB + 10 % of capacity.
Instance: 8 devices on a 100 GB/s switch, 50 GB/s network per node, $10/h ($4 spot), billed by the
minute with a 10 minute minimum.
Profile (bf16-mixed, AdamW, 1e9 parameters, 1000 tokens per sample), per sample:
  forward  mm    1e12 FLOPs, 1e9 B              (module 'head', 1 call)
  forward  gelu  1e9 FLOPs,  4e9 B              (module 'layers.*.act', 4 calls: 4 repeated blocks)
  backward mm    2e12 FLOPs, 2e9 B              (1 call)
  optimizer      16e9 B, independent of the batch (1 call)
  activations 2e9 B, under checkpointing 0.5e9 B, no temporaries.
"""

from __future__ import annotations

import datetime as dt

from advisor.catalog.schema import Catalog, Device, Efficiency, Instance
from advisor.profiler.schema import Linear, Memory, OpRecord, Profile

AS_OF = dt.date(2026, 1, 1)


def toy_efficiency(**over) -> Efficiency:
    data = dict(
        id="toy-eff",
        note="round numbers for hand-derived tests",
        matrix=[{"min_size": 0, "efficiency": 0.5}],
        vector=0.5,
        memory=[{"min_size": 0, "efficiency": 0.8}],
        op_overhead_s=10e-6,
        device_link=0.5,
        network=0.5,
        collective_latency_s=10e-6,
        memory_reserve_bytes="1 GB",
        memory_reserve_fraction=0.1,
    )
    data.update(over)
    return Efficiency.model_validate(data)


def toy_device(**over) -> Device:
    data = dict(
        id="toy",
        name="Toy GPU",
        vendor="test",
        kind="gpu",
        software_stack="cuda",
        efficiency="toy-eff",
        memory_bytes="100 GB",
        memory_bandwidth="1 TB/s",
        matrix_flops={"bf16": "100 TFLOPS", "fp16": "100 TFLOPS"},
        vector_flops={"fp32": "10 TFLOPS"},
        device_link={"type": "toylink", "bandwidth_per_direction": "100 GB/s"},
        tdp_watts=300,
        launch_year=2026,
        source="https://example.com/toy",
        as_of=AS_OF,
    )
    data.update(over)
    return Device.model_validate(data)


def toy_instance(**over) -> Instance:
    data = dict(
        id="toy-8x",
        provider="testcloud",
        name="toy.8x",
        device="toy",
        device_count=8,
        fabric={"type": "toyswitch", "bandwidth_per_direction": "100 GB/s"},
        network={"type": "toynet", "bandwidth_per_direction": "50 GB/s"},
        max_nodes=4,
        pricing={
            "on_demand_usd_per_hour": 10,
            "spot_usd_per_hour": 4,
            "regions": ["r1"],
            "billing_granularity_s": "1m",
            "minimum_billed_s": "10m",
        },
        source="https://example.com/toy-8x",
        as_of=AS_OF,
    )
    data.update(over)
    return Instance.model_validate(data)


def toy_catalog(devices=(), instances=()) -> Catalog:
    devs = {d.id: d for d in (toy_device(), *devices)}
    insts = {i.id: i for i in (toy_instance(), *instances)}
    return Catalog(devices=devs, efficiency={"toy-eff": toy_efficiency()}, instances=insts)


def _op(op, phase, category, dtype, module, count, flops, nbytes, constant=False) -> OpRecord:
    line = Linear.constant if constant else (lambda v: Linear.proportional(1, v))
    return OpRecord(
        op=op,
        phase=phase,
        category=category,
        dtype=dtype,
        module=module,
        count=count,
        flops=line(flops),
        bytes_read=line(nbytes),
        bytes_written=line(0.0),
    )


def toy_profile(**over) -> Profile:
    data = dict(
        name="toy-model",
        model_file="toy.py",
        model_sha256="0" * 64,
        created="2026-01-01T00:00:00+00:00",
        advisor_version="0",
        torch_version="0",
        device="meta",
        precision="bf16-mixed",
        optimizer="adamw",
        profiled_batch_sizes=[1, 2],
        batch_size=1,
        input_shapes=["1x1000 int64"],
        tokens_per_sample=1000,
        linear_in_batch=True,
        parameters=1_000_000_000,
        trainable_parameters=1_000_000_000,
        memory=Memory(
            parameter_bytes=4e9,
            gradient_bytes=4e9,
            optimizer_state_bytes=8e9,
            activation_bytes=Linear(per_sample=2e9),
            checkpoint_bytes=Linear(per_sample=0.5e9),
            temporary_peak_bytes=Linear(),
            peak_bytes=Linear(fixed=16e9, per_sample=2e9),
        ),
        ops=[
            _op("aten.mm", "forward", "matrix", "bf16", "head", 1, 1e12, 1e9),
            _op("aten.gelu", "forward", "vector", "bf16", "layers.*.act", 4, 1e9, 4e9),
            _op("aten.mm", "backward", "matrix", "bf16", "head", 1, 2e12, 2e9),
            _op("aten._foreach_add_", "optimizer", "memory", "fp32", "", 1, 0.0, 16e9, constant=True),
        ],
    )
    data.update(over)
    return Profile.model_validate(data)
