"""The costs of a whole run besides its steps (estimator/runtime.py) and the host's image pipeline, on the toy
hardware of estimator_fixtures.py with round run-cost data; every figure is derived by hand beside it."""

from __future__ import annotations

import pytest
from estimator_fixtures import toy_catalog, toy_device, toy_instance, toy_profile

from advisor.catalog.schema import Catalog, Provider, Runtime
from advisor.estimator.config import Config, Workload
from advisor.estimator.estimate import billed_cost, estimate
from advisor.estimator.runtime import RunOptions, checkpoint_bytes, image_pixels, input_pipeline, run_costs

RUNTIME = Runtime(
    id="default",
    provisioning_s=300,
    setup_s=120,
    framework_init_s=60,
    collective_init_s_per_node=0.5,
    checkpoint_every_s=3600,
    checkpoint_bandwidth=1e9,
    eval_share=0.01,
    image_samples_per_s_per_vcpu=100,
    image_reference_pixels=224 * 224,
    source="hand-made test data",
    as_of="2026-01-01",
)
PROVIDER = Provider(
    id="testcloud",
    name="Test cloud",
    provisioning_s=180,
    provisioning_by_kind={"tpu": 600},
    setup_s=60,
    source="hand-made test provider",
    as_of="2026-01-01",
)


def catalog(provider: bool = True, **instance) -> Catalog:
    base = toy_catalog()
    insts = {"toy-8x": toy_instance(**instance)} if instance else base.instances
    return base.model_copy(
        update={
            "instances": insts,
            "runtime": {"default": RUNTIME},
            "providers": {"testcloud": PROVIDER} if provider else {},
        }
    )


def node(**over) -> Config:
    return Config(**{"device": "toy", "instance": "toy-8x", "devices_per_node": 8, "strategy": "ddp", **over})


def test_checkpoint_is_the_weights_and_the_optimizer_state():
    # 1e9 parameters, mixed-precision AdamW: fp32 weights 4 B + m and v 8 B = 12 B per parameter
    assert checkpoint_bytes(toy_profile(), "bf16-mixed") == 12e9
    assert checkpoint_bytes(toy_profile(), "bf16") == 6e9  # pure bf16: 2 + 4 B


def test_every_part_of_a_run_by_hand():
    dev, inst = toy_device(), toy_instance()
    run = run_costs(toy_profile(), catalog(), dev, inst, node(), train_s=9000)
    # provider: 180 s provisioning, 60 s setup; init 60 s + 0.5 s × 1 node
    assert (run.provisioning_s, run.setup_s, run.init_s) == (180, 60, 60.5)
    assert run.eval_s == pytest.approx(90)  # 1 % of 9,000 s
    # one write: 12e9 B / 1e9 B/s = 12 s (DDP: rank 0 writes); ceil(9,090 s / 3,600 s) = 3 writes (the last at the end)
    assert (run.checkpoints, run.checkpoint_write_s, run.checkpoint_s) == (3, 12, 36)
    assert run.total_s == pytest.approx(180 + 60 + 60.5 + 9000 + 90 + 36)  # 9,426.5 s
    assert run.startup_s == pytest.approx(300.5)


def test_fsdp_writes_shards_in_parallel_and_options_override_the_defaults():
    dev, inst = toy_device(), toy_instance()
    cfg = node(strategy="fsdp", nodes=2)
    run = run_costs(toy_profile(), catalog(), dev, inst, cfg, 9000, RunOptions(checkpoint_every_s=0, eval_share=0))
    assert run.init_s == 61  # 60 s + 0.5 s × 2 nodes
    assert (run.checkpoints, run.checkpoint_write_s) == (1, 6)  # only the final one; 12e9 B over 2 nodes × 1 GB/s
    assert run.eval_s == 0
    assert run.total_s == pytest.approx(180 + 60 + 61 + 9000 + 6)


def test_provider_without_an_entry_takes_the_runtime_defaults_and_a_bare_device_none():
    run = run_costs(toy_profile(), catalog(provider=False), toy_device(), toy_instance(), node(), 100)
    assert (run.provisioning_s, run.setup_s) == (300, 120)  # runtime.yaml's defaults
    bare = run_costs(toy_profile(), catalog(), toy_device(), None, Config(device="toy"), 100)
    assert (bare.provisioning_s, bare.setup_s) == (0, 0)


def test_no_runtime_data_means_no_fixed_costs():
    run = run_costs(toy_profile(), toy_catalog(), toy_device(), toy_instance(), node(), 100)
    assert run.total_s == 100 and run.checkpoints == 0


def test_the_estimate_totals_and_bills_the_whole_run():
    cfg = node(global_batch=8)
    est = estimate(toy_profile(), catalog(), cfg, Workload(steps=1000))
    train = 1000 * est.step_time_s
    run = est.run
    assert run.train_s == pytest.approx(train)
    assert est.total_time_s == pytest.approx(run.total_s)
    assert est.total_time_s == pytest.approx(180 + 60 + 60.5 + train * 1.01 + run.checkpoint_s)
    assert est.cost_usd == pytest.approx(billed_cost(est.total_time_s, 10, 1, toy_instance()))


@pytest.mark.parametrize(
    ("shape", "pixels"),
    [
        ("x: [8, 3, 224, 224] fp32", 50176),
        ("x: [8, 224, 224, 3] bf16", 50176),
        ("x: [8, 1, 28, 28] fp32", 784),
        ("tokens: [8, 1024] int64", None),
        ("x: [8, 3, 224, 224] uint8", None),  # raw bytes: not decoded by the host here
    ],
)
def test_image_inputs_are_recognised(shape, pixels):
    assert image_pixels(toy_profile(input_shapes=[shape])) == pixels


def test_the_hosts_vcpus_bound_an_image_model():
    prof = toy_profile(input_shapes=["x: [1, 3, 224, 224] fp32"])
    inst = toy_instance(vcpus=16)
    # 16 vCPUs - 8 for the training processes = 8 decoding at 100 images/s (224²): 800 images/s per node
    feed = input_pipeline(prof, RUNTIME, toy_device(), inst, node(), 64, step_s=0.05)
    assert feed.samples_per_s == pytest.approx(800)
    assert feed.wait_s == pytest.approx(64 / 800 - 0.05)  # 80 ms of decoding, the step hides 50 ms
    assert input_pipeline(prof, RUNTIME, toy_device(), inst, node(), 64, step_s=0.1).wait_s == 0
    two = input_pipeline(prof, RUNTIME, toy_device(), inst, node(nodes=2), 64, step_s=0.0)
    assert two.samples_per_s == pytest.approx(1600)  # each node decodes its share
    assert input_pipeline(prof, RUNTIME, toy_device(), toy_instance(vcpus=None), node(), 64, 0.0) is None


def test_loader_workers_cap_the_decoding_processes():
    prof = toy_profile(input_shapes=["x: [1, 3, 224, 224] fp32"])
    inst = toy_instance(vcpus=64)
    # 64 - 8 = 56 vCPUs free, but 2 workers per device x 8 devices = 16 processes at 100 images/s: 1,600/s
    feed = input_pipeline(prof, RUNTIME, toy_device(), inst, node(), 256, step_s=0.1, workers=2)
    assert feed.vcpus_per_node == 16 and feed.loader_workers == 2
    assert feed.samples_per_s == pytest.approx(1600)
    assert feed.wait_s == pytest.approx(256 / 1600 - 0.1)  # 160 ms of decoding, the step hides 100 ms
    # more workers than free vCPUs: the vCPUs bound it (56 x 100 = 5,600/s)
    many = input_pipeline(prof, RUNTIME, toy_device(), inst, node(), 256, step_s=0.1, workers=10)
    assert many.vcpus_per_node == 56 and many.samples_per_s == pytest.approx(5600)
    # an instance of unknown vCPUs: the user's 2 x 8 processes are what decode
    unknown = input_pipeline(prof, RUNTIME, toy_device(), toy_instance(vcpus=None), node(), 256, 0.1, workers=2)
    assert unknown.vcpus_per_node == 16 and unknown.samples_per_s == pytest.approx(1600)
    # a CPU instance: workers share the training cores, so the decoding time is the same with any count
    cpu = toy_device(id="toycpu", kind="cpu", memory_bytes=None, cores=8, threads_per_core=2, software_stack=None)
    cfg = Config(device="toycpu", instance="toy-8x", devices_per_node=1)
    one = toy_instance(device="toycpu", device_count=1, vcpus=16)
    assert input_pipeline(prof, RUNTIME, cpu, one, cfg, 64, 1.0, workers=2).samples_per_s == pytest.approx(1600)


def test_an_estimate_with_few_loader_workers_waits_for_them():
    prof = toy_profile(input_shapes=["x: [1, 3, 896, 896] fp32"])  # 16 x 224²: 100 / 16 = 6.25 images/s per vCPU
    cat = catalog(vcpus=64)
    # 1 worker per device: 8 processes per node x 6.25 = 50 images/s, so 64 images take 1.28 s, longer than the
    # toy step (about 0.54 s): the devices wait and the run goes at 50 images/s
    est = estimate(prof, cat, node(global_batch=64), Workload(steps=10), run=RunOptions(loader_workers=1))
    assert est.samples_per_s == pytest.approx(50, rel=1e-9) and est.input.loader_workers == 1
    assert any("--loader-workers 1" in a for a in est.assumptions)
    # unset: 56 free vCPUs x 6.25 = 350 images/s, 64 in 183 ms, hidden behind the step
    free = estimate(prof, cat, node(global_batch=64), Workload(steps=10))
    assert free.input.wait_s == 0 and free.samples_per_s > 100


def test_on_a_cpu_instance_decoding_adds_to_the_step():
    cpu = toy_device(id="toycpu", kind="cpu", memory_bytes=None, cores=8, threads_per_core=2, software_stack=None)
    prof = toy_profile(input_shapes=["x: [1, 3, 112, 112] fp32"])  # a quarter of 224²: 4 × faster to decode
    inst = toy_instance(device="toycpu", device_count=1, vcpus=16)
    cfg = Config(device="toycpu", instance="toy-8x", devices_per_node=1)
    feed = input_pipeline(prof, RUNTIME, cpu, inst, cfg, 64, step_s=1.0)
    assert feed.shared_cores and feed.samples_per_s == pytest.approx(16 * 100 * 4)  # all 16 vCPUs
    assert feed.wait_s == pytest.approx(64 / 6400)  # 10 ms more per step, whatever the step


def test_an_input_bound_estimate_says_so():
    prof = toy_profile(input_shapes=["x: [1, 3, 224, 224] fp32"])
    cat = catalog(vcpus=9)  # one decoding vCPU per node: 100 images/s
    est = estimate(prof, cat, node(global_batch=64), Workload(steps=10))
    assert est.input.wait_s > 0 and est.samples_per_s == pytest.approx(100, rel=1e-9)  # 64 images per 0.64 s
    assert any("input pipeline" in a and "bounds the step" in a for a in est.assumptions)


def test_every_provider_of_the_shipped_catalog_has_its_start_up_costs():
    from advisor import api

    cat = api.catalog()
    assert {i.provider for i in cat.instances.values()} <= set(cat.providers)
    assert "default" in cat.runtime and cat.providers["onprem"].owned
    assert not any(p.owned for name, p in cat.providers.items() if name != "onprem")


def test_recommend_ranks_with_the_users_loader_workers():
    from advisor import api
    from advisor.recommender.model import Constraints
    from advisor.recommender.rank import recommend

    cat, prof = api.catalog(), api.profile_from("resnet50")  # 224 x 224 images
    rate = cat.runtime["default"].image_samples_per_s_per_vcpu  # 180 images/s per decoding process
    ask = {"devices": ["h100-sxm"], "max_devices": 8, "precisions": ["bf16-mixed"], "global_batch": 1024}
    rec = recommend(prof, cat, Workload(steps=1000), Constraints(**ask, loader_workers=1), top=5)
    # one process per H100 decodes 180 images/s, far below what an H100 trains ResNet-50 at (about 2,800/s):
    # every option waits for it, a step of 1,024 images takes 1024 / (180 x devices) s
    assert rec.options and all(o.input_bound for o in rec.options)
    for o in rec.options:
        assert o.step_time_s == pytest.approx(1024 / (rate * o.devices_per_node * o.nodes), rel=1e-6)
    # the answer's assumptions are estimated with the same workers, so they say what holds it back
    assert any("--loader-workers 1" in a and "bounds the step" in a for a in rec.assumptions)
    free = recommend(prof, cat, Workload(steps=1000), Constraints(**ask), top=5)
    assert not any(o.input_bound for o in free.options)
