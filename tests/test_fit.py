"""'Does not fit' is never priced: what would make it fit proposes only changes from the current settings, and
`advisor estimate` prints the memory, the hints and no time or cost, with exit code 3. Toy hardware of
estimator_fixtures.py: 100 GB devices, reserve 1 GB + 10 % = 11 GB, 8 per toy-8x node (up to 4 nodes)."""

from __future__ import annotations

import json

import pytest
from conftest import assert_user_error, run_cli
from estimator_fixtures import toy_catalog, toy_device, toy_instance, toy_profile

from advisor import api
from advisor.estimator.config import Config, Workload
from advisor.estimator.estimate import estimate
from advisor.estimator.fit import node_devices, ways_to_fit
from advisor.profiler.schema import save_profile


def big_profile():
    """6e9 parameters: 96 GB of mixed-precision AdamW state (16 B each), more than a 100 GB device less 11 GB."""
    prof = toy_profile()
    memory = prof.memory.model_copy(
        update={"parameter_bytes": 24e9, "gradient_bytes": 24e9, "optimizer_state_bytes": 48e9}
    )
    return toy_profile(parameters=6_000_000_000, trainable_parameters=6_000_000_000, memory=memory)


def catalog():
    big = toy_device(id="toy-big", name="Toy GPU 200", memory_bytes="200 GB")
    return toy_catalog(
        devices=[big], instances=[toy_instance(id="big-1x", name="big.1x", device="toy-big", device_count=1)]
    )


def test_a_run_that_does_not_fit_has_no_time_and_no_cost():
    est = estimate(big_profile(), catalog(), Config(device="toy"), Workload(steps=10))
    assert not est.fits and est.total_time_s is None and est.cost_usd is None and est.run is None


def test_hints_for_one_device_are_more_devices_or_a_larger_one():
    hints = ways_to_fit(big_profile(), catalog(), Config(device="toy"))
    # checkpointing keeps 0.5 GB of activations instead of 2 GB: 96 + 11 + 0.5 > 100, so no checkpointing hint;
    # FSDP over 2 devices: 48 GB of state + 11 + 2 GB activations + 2 gathered units of 1.5e9 × 2 B = 67 GB
    assert hints[0] == "--count 2 --strategy fsdp: 67 GB of 100 GB per device"
    # 200 GB device: 96 + 1 + 20 (10 %) + 2 = 119 GB
    assert hints[1] == "a device with more memory: toy-big (200 GB), e.g. -H big.1x: 119 GB of 200 GB per device"
    assert not any("--checkpointing" in h for h in hints)


def test_hints_never_repeat_the_current_settings():
    cfg = Config(device="toy", instance="toy-8x", devices_per_node=8, strategy="ddp", global_batch=8)
    ddp = ways_to_fit(big_profile(), catalog(), cfg)
    # 96/8 = 12 GB of state + 11 + 2 GB activations + 2 units × 6e9/4 blocks × 2 B gathered (6 GB) = 31 GB
    assert ddp[0] == "--strategy fsdp: 31 GB of 100 GB per device"
    assert not any("--nodes" in h for h in ddp)  # more devices only when nothing simpler fits
    fsdp = ways_to_fit(toy_profile(), catalog(), cfg.model_copy(update={"strategy": "fsdp", "micro_batch": 64}))
    # 16/8 = 2 GB + 11 + 128 GB of activations at micro-batch 64: fits with checkpointing (32 GB) or a smaller
    # micro-batch; never '--strategy fsdp', which is already set
    assert not any("--strategy fsdp" in h for h in fsdp)
    assert fsdp[0] == "--checkpointing: 46 GB of 100 GB per device"  # 2 + 11 + 64 × 0.5 + 1 GB gathered
    assert fsdp[1].startswith("--micro-batch 43 ")  # 2 + 11 + 1 + 2b ≤ 100 -> b ≤ 43


def test_node_devices_is_the_largest_node():
    assert node_devices(catalog(), toy_device()) == (8, catalog().instances["toy-8x"])


@pytest.fixture(scope="module")
def prof_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("fit") / "big.yaml"
    save_profile(big_profile(), path)
    return str(path)


def test_estimate_cli_exits_3_with_the_memory_and_no_price(prof_path):
    res = run_cli("estimate", prof_path, "-H", "a100-40gb-sxm", "--steps", "100", "--global-batch", "1")
    assert res.returncode == 3, res.stderr
    assert "does not fit" in res.stdout and "what would make it fit" in res.stdout
    table = res.stdout.split("assumptions:")[0]
    assert "$" not in table and "step time" not in table.replace("no step time", "") and "MFU" not in table
    data = json.loads(run_cli("estimate", prof_path, "-H", "a100-40gb-sxm", "--steps", "100", "-f", "json").stdout)
    assert data["fits"] is False and data["to_fit"]
    for key in ("cost_usd", "total_time_s", "step_time_s", "samples_per_s", "mfu", "run"):
        assert data[key] is None


def test_count_beyond_one_node_is_refused_with_the_nearest_values(prof_path):
    res = run_cli("estimate", prof_path, "-H", "h100-sxm", "--count", "16", "--steps", "1")
    assert_user_error(res, "--count 16 is more than one node of h100-sxm holds", "--count 8", "--nodes 2")
    with pytest.raises(Exception) as err:
        api.resolve_hardware(api.catalog(), "h100-sxm", 16)
    assert "largest" in str(err.value.message)


def test_an_inference_chip_is_not_estimated_for_training(prof_path):
    res = run_cli("estimate", prof_path, "-H", "inf2.xlarge", "--steps", "1")
    assert_user_error(res, "inferentia2", "not a training device")
