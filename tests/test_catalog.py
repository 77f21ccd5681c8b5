"""The shipped catalog: every file validates, the required hardware is there, figures match datasheets."""

from __future__ import annotations

import datetime as dt

import pytest

from advisor.catalog.load import load_catalog, shipped_dir, validate_paths, yaml_files
from advisor.catalog.lookup import find, find_device, find_instance
from advisor.errors import UserError

REQUIRED_DEVICES = """
v100-sxm2-32gb v100-pcie-16gb t4 a10 a10g l4 l40s a100-40gb-sxm a100-80gb-sxm a100-80gb-pcie h100-sxm h100-pcie
h100-nvl h200 b200 gb200 rtx-3090 rtx-4090 rtx-5090 rtx-a6000 rtx-6000-ada mi250x mi300x mi325x tpu-v2 tpu-v3
tpu-v4 tpu-v5e tpu-v5p tpu-v6e trainium trainium2 inferentia2 gaudi2 gaudi3 xeon-8480plus xeon-6980p epyc-9654
epyc-9965 graviton3 graviton4
b300 gb300 h20 h800-sxm a800-80gb-sxm a800-80gb-pcie a800-40gb-pcie l20 mi350x mi355x tpu-v7 trainium3
ascend-910b ascend-910c
""".split()


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(use_env=False)


@pytest.mark.parametrize("path", yaml_files(shipped_dir()), ids=lambda p: p.name)
def test_every_shipped_file_validates(path):
    problems, cat = validate_paths([path])
    assert problems == []
    assert cat is not None


def test_required_devices_present(catalog):
    missing = [d for d in REQUIRED_DEVICES if d not in catalog.devices]
    assert missing == []


def test_every_entry_is_sourced_and_dated(catalog):
    for entry in [*catalog.devices.values(), *catalog.instances.values()]:
        assert entry.source.strip(), entry.id
        assert dt.date(2019, 1, 1) <= entry.as_of <= dt.date(2027, 12, 31), entry.id


def test_instances_cover_clouds_cpus_tpus_and_onprem(catalog):
    insts = list(catalog.instances.values())
    assert len(insts) >= 60
    providers = {i.provider for i in insts}
    assert {"aws", "gcp", "azure", "lambda", "onprem"} <= providers
    assert len(providers - {"aws", "gcp", "azure", "lambda", "onprem"}) >= 1  # at least one more GPU cloud
    for cloud in ("aws", "gcp", "azure"):
        cpu_only = [i for i in insts if i.provider == cloud and catalog.devices[i.device].kind == "cpu"]
        assert cpu_only, f"{cloud} has no CPU-only instance"
    tpus = [i for i in insts if catalog.devices[i.device].kind == "tpu"]
    assert tpus and all(i.pricing.per == "device" for i in tpus)  # TPUs are priced per chip-hour
    onprem = [i for i in insts if i.provider == "onprem"]
    assert {"h100-sxm", "rtx-4090"} <= {i.device for i in onprem}
    assert all(i.amortized for i in onprem)


def test_cpu_instance_share_matches_vcpus(catalog):
    # A CPU instance's device_count is its share of a socket: vcpus / (cores × threads per core).
    for inst in catalog.instances.values():
        dev = catalog.devices[inst.device]
        if dev.kind == "cpu" and inst.vcpus:
            share = inst.vcpus / (dev.cores * dev.threads_per_core)
            assert inst.device_count == pytest.approx(share, rel=0.02), inst.id


@pytest.mark.parametrize(
    ("device", "field", "expected"),
    [
        # NVIDIA H100 datasheet: bf16 tensor 1,979 TFLOPS with sparsity -> 989.5 dense
        ("h100-sxm", "matrix.bf16", 989e12),
        # A100 datasheet: bf16 tensor 312 TFLOPS dense (624 with sparsity)
        ("a100-80gb-sxm", "matrix.bf16", 312e12),
        ("a100-80gb-sxm", "memory_bandwidth", 2.039e12),  # 2,039 GB/s HBM2e
        ("h100-sxm", "memory_bandwidth", 3.35e12),  # 3.35 TB/s HBM3
        ("tpu-v5p", "memory_bandwidth", 2.765e12),  # Google: 2,765 GB/s (not the often-copied 4.8 TB/s)
        ("tpu-v5p", "matrix.bf16", 459e12),  # Google: 459 TFLOPS bf16 per chip
        ("t4", "matrix.fp16", 65e12),  # T4 datasheet: 65 TFLOPS fp16 mixed precision
        ("mi300x", "matrix.bf16", 1307.4e12),  # AMD: 1,307.4 TFLOPS bf16 dense
        ("h100-sxm", "memory_bytes", 80e9),
        ("h200", "memory_bytes", 141e9),  # not SkyPilot's 80 GB
        # HGX B300 board: FP16/BF16 36 PF with sparsity / 8 GPUs / 2 = 2.25 PF dense per GPU
        ("b300", "matrix.bf16", 2.25e15),
        # GB300 NVL72 rack: 360 PF with sparsity / 72 GPUs / 2 = 2.5 PF dense per GPU
        ("gb300", "matrix.bf16", 2.5e15),
        ("gb300", "memory_bandwidth", 8e12),  # 576 TB/s / 72 = 8 TB/s
        # Alibaba's H20 instances: 39.5 TFLOPS FP32 = 78 SMs x 128 lanes x 2 FLOPs x 1.98 GHz
        ("h20", "vector.fp32", 39.5e12),
        ("h20", "memory_bandwidth", 4e12),  # 96 GB HBM3 at 4 TB/s (Alibaba gn8v)
        ("mi355x", "matrix.bf16", 2516.6e12),  # 2.4 GHz x 1024 Matrix Cores x 512 FMA x 2 = 2,516.6 TFLOPS
        ("mi350x", "matrix.bf16", 2306.9e12),  # same at 2.2 GHz: 2,516.6 x 2.2 / 2.4 = 2,306.9 TFLOPS
        ("tpu-v7", "matrix.bf16", 2307e12),  # Google TPU7x: 2,307 TFLOPS bf16 per chip
        ("trainium3", "matrix.bf16", 671e12),  # AWS Neuron: 671 BF16 TFLOPS dense per chip
        ("ascend-910c", "matrix.bf16", 781e12),  # SemiAnalysis: 300 PF dense BF16 / 384 chips = 781 TFLOPS
    ],
)
def test_datasheet_figures(catalog, device, field, expected):
    dev = catalog.devices[device]
    if field.startswith("matrix."):
        value = dev.matrix_flops.get(field.split(".")[1])
    elif field.startswith("vector."):
        value = dev.vector_flops.get(field.split(".")[1])
    else:
        value = getattr(dev, field)
    assert value == pytest.approx(expected, rel=0.01)


def test_boost_clocks_agree_with_the_vector_peaks(catalog):
    """A datasheet's FP32 peak is SMs x CUDA cores per SM x 2 x boost clock: 64 cores per SM on Volta, Turing and
    GA100 (A100 40GB: 108 x 64 x 2 x 1.41 GHz = 19.5 TFLOPS), 128 on GA10x, Ada, Hopper and Blackwell (H100 SXM:
    132 x 128 x 2 x 1.98 GHz = 66.9 TFLOPS), so every clock recovers one of the two core counts within 1.5 %."""
    clocked = [d for d in catalog.devices.values() if d.boost_clock]
    assert len(clocked) >= 25
    for dev in clocked:
        cores = dev.vector_flops.fp32 / (2 * dev.sm_count * dev.boost_clock)
        assert min(abs(cores / 64 - 1), abs(cores / 128 - 1)) < 0.015, (dev.id, cores)


def test_a_familys_gemm_share_is_the_median_of_its_measured_cards(catalog):
    """Each NVIDIA family's curves assume the median best-shape GEMM share of its measured cards (Ampere: A100 SXM
    0.829, A100 PCIe 0.774, RTX A6000 0.778, RTX 3090 1.065 -> (0.778 + 0.829) / 2 = 0.8035), so no card's figure is
    silently off its family's reference; the V100 32 GB repeats the 16 GB part's figure."""
    import statistics

    measured: dict[str, list[float]] = {}
    for dev in catalog.devices.values():
        if dev.gemm_share:
            measured.setdefault(dev.efficiency, []).append(dev.gemm_share)
    assert set(measured) == {f"nvidia-{f}" for f in ("volta", "turing", "ampere", "ada", "hopper", "blackwell")}
    for family, shares in measured.items():
        assert catalog.efficiency[family].gemm_share == pytest.approx(statistics.median(shares), abs=0.001), family
    assert catalog.efficiency["nvidia-ampere"].gemm_share == pytest.approx(0.8035, abs=0.001)


def test_a_familys_fp32_gemm_share_is_the_median_of_its_measured_cards(catalog):
    """The same for fp32 GEMMs on the CUDA cores (Ampere: A100 SXM 0.984, A100 PCIe 0.901, RTX 3090 0.696,
    RTX A6000 0.618 -> (0.696 + 0.901) / 2 = 0.7985); every card with an fp32 figure has a tensor one from the
    same table, and no share is above the fp32 peak."""
    import statistics

    measured: dict[str, list[float]] = {}
    for dev in catalog.devices.values():
        if dev.fp32_gemm_share:
            assert dev.gemm_share and dev.fp32_gemm_share <= 1.0, dev.id
            measured.setdefault(dev.efficiency, []).append(dev.fp32_gemm_share)
    assert set(measured) == {f"nvidia-{f}" for f in ("volta", "turing", "ampere", "ada", "hopper", "blackwell")}
    for family, shares in measured.items():
        assert catalog.efficiency[family].fp32_gemm_share == pytest.approx(statistics.median(shares), abs=0.001)
    assert catalog.efficiency["nvidia-ampere"].fp32_gemm_share == pytest.approx(0.7985, abs=0.001)


def test_no_bf16_on_volta_and_turing(catalog):
    for dev_id in ("v100-sxm2-32gb", "t4"):
        assert "bf16" not in catalog.devices[dev_id].dtypes()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("H100 SXM", "h100-sxm"),
        ("h100 sxm5", "h100-sxm"),
        ("h100-pcie", "h100-pcie"),
        ("4090", "rtx-4090"),  # an alias no other device's name contains
        ("MI300X", "mi300x"),
        ("tpu v5p", "tpu-v5p"),
    ],
)
def test_device_lookup_is_forgiving(catalog, query, expected):
    assert find_device(catalog, query).id == expected


def test_instance_lookup(catalog):
    assert find_instance(catalog, "p5.48xlarge").id == "aws-p5.48xlarge"
    assert find(catalog, "aws p5.48xlarge").id == "aws-p5.48xlarge"


def test_unknown_name_suggests(catalog):
    with pytest.raises(UserError) as info:
        find_device(catalog, "h1000")
    assert "unknown device 'h1000'" in info.value.line()
    assert "h100" in " ".join(info.value.suggestions)


@pytest.mark.parametrize(
    ("family", "variants"),
    [
        ("a100", {"a100-40gb-sxm", "a100-40gb-pcie", "a100-80gb-sxm", "a100-80gb-pcie"}),
        ("h100", {"h100-sxm", "h100-pcie", "h100-nvl"}),
        ("a100-80gb", {"a100-80gb-sxm", "a100-80gb-pcie"}),  # an alias, but the PCIe card is 80 GB too
        ("v100", {"v100-sxm2-16gb", "v100-sxm2-32gb", "v100-pcie-16gb"}),
    ],
)
def test_a_family_word_lists_its_variants(catalog, family, variants):
    with pytest.raises(UserError) as info:
        find_device(catalog, family)
    listed = set(info.value.message.split("matches ")[1].split(", "))
    assert "ambiguous" in info.value.message and listed == variants


def test_part_of_a_name_is_not_taken_for_it(catalog):
    with pytest.raises(UserError) as info:
        find_device(catalog, "l40")  # the L40 is not in the catalog; the L40S is another card
    assert "unknown device 'l40'" in info.value.message and "l40s" in info.value.suggestions


def test_ambiguous_name_lists_candidates(catalog):
    with pytest.raises(UserError) as info:
        find_device(catalog, "a100 pcie")
    line = info.value.line()
    assert "ambiguous" in line and "a100-40gb-pcie" in line and "a100-80gb-pcie" in line


# Phrases that read as someone's memory rather than documentation (issue 9): a figure has a source, or its
# note says it is unpublished or unverified and what was used instead.
MEMORY_PHRASES = ("as i recall", "i think", "from memory", "as i know", "as remembered", "probably", "i believe")


def test_notes_read_as_documentation():
    import yaml

    found = []
    for path in yaml_files(shipped_dir()):
        data = yaml.safe_load(path.read_text())
        for section in ("devices", "instances", "efficiency"):
            for entry in data.get(section) or []:
                text = " ".join(str(entry.get(key) or "") for key in ("notes", "note")).lower()
                found += [f"{path.name}:{entry['id']}: {p!r}" for p in MEMORY_PHRASES if p in text]
    assert found == []


def test_readme_names_exactly_the_catalog_providers(catalog):
    # The README's catalog section lists the instance providers; every one must be in the catalog, and every
    # provider in the catalog must be listed. Names as the README spells them -> catalog provider ids.
    from pathlib import Path

    names = {
        "AWS": "aws",
        "GCP": "gcp",
        "Azure": "azure",
        "OCI": "oci",
        "Lambda": "lambda",
        "RunPod": "runpod",
        "CoreWeave": "coreweave",
        "Alibaba Cloud": "alibaba",
        "Tencent Cloud": "tencent",
        "on-prem": "onprem",
    }
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    line = next(ln for ln in readme.split("\n- ") if ln.startswith("Instances:"))
    listed = line.split("(")[0]  # "Instances: AWS, GCP, ..., Tencent Cloud and on-prem "
    named = {pid for name, pid in names.items() if name in listed}
    assert named == {i.provider for i in catalog.instances.values()}
