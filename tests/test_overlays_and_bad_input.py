"""Overlays add and override by id; every kind of bad catalog input is one clear line and exit code 2."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import assert_user_error, run_cli

from advisor.catalog.load import load_catalog
from advisor.errors import UserError

GOOD_DEVICE = """
devices:
  - id: my-gpu
    name: My GPU
    vendor: acme
    kind: gpu
    software_stack: cuda
    efficiency: nvidia-hopper
    memory_bytes: 48 GB
    memory_bandwidth: 1 TB/s
    vector_flops: {fp32: 50 TFLOPS}
    tdp_watts: 300
    launch_year: 2025
    source: internal benchmark sheet
    as_of: 2026-11-30
"""


def write(tmp_path, text, name="overlay.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_overlay_overrides_price_field_by_field(tmp_path):
    base = load_catalog(use_env=False).instances["aws-p5.48xlarge"]
    path = write(tmp_path, "instances:\n  - id: aws-p5.48xlarge\n    pricing: {on_demand_usd_per_hour: 60.0}\n")
    cat = load_catalog([path], use_env=False)
    inst = cat.instances["aws-p5.48xlarge"]
    assert inst.pricing.on_demand_usd_per_hour == 60.0
    assert inst.pricing.regions == base.pricing.regions  # untouched fields stay
    assert inst.device_count == base.device_count
    assert cat.overrides == [f"aws-p5.48xlarge from {path}"]


def test_overlay_adds_entries_and_env_var(tmp_path, monkeypatch):
    path = write(tmp_path, GOOD_DEVICE)
    monkeypatch.setenv("ADVISOR_CATALOG", str(tmp_path))
    cat = load_catalog()
    assert cat.devices["my-gpu"].memory_bytes == 48e9
    assert cat.overrides == []
    result = run_cli("catalog", "show", "my-gpu", "--format", "json", env={"ADVISOR_CATALOG": str(path)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["memory_bandwidth"] == 1e12


def test_cli_reports_overrides(tmp_path):
    path = write(tmp_path, "instances:\n  - id: aws-p5.48xlarge\n    pricing: {on_demand_usd_per_hour: 60.0}\n")
    result = run_cli("catalog", "show", "p5.48xlarge", "--catalog", str(path), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert "overlay overrides aws-p5.48xlarge" in result.stderr
    assert json.loads(result.stdout)["pricing"]["on_demand_usd_per_hour"] == 60.0


GOOD_EFFICIENCY = """\
efficiency:
  - id: my-eff
    note: a test family
    matrix: [{min_size: 0, efficiency: 0.5}]
    vector: 0.5
    memory: [{min_size: 0, efficiency: 0.8}]
    op_overhead_s: 10us
    device_link: 0.5
    network: 0.5
    collective_latency_s: 10us
"""

BAD = {
    "malformed": ("devices: [\n  - id: x\n", ["overlay.yaml:", "malformed YAML"]),
    "unsafe_tag": ("devices: !!python/object/apply:os.system ['echo hi']\n", ["overlay.yaml:1", "python/object"]),
    "missing_field": (GOOD_DEVICE.replace("    tdp_watts: 300\n", ""), ["my-gpu", "field tdp_watts", "missing"]),
    "unknown_field": (
        GOOD_DEVICE.replace("tdp_watts: 300", "tdp_watts: 300\n    colour: red"),
        ["field colour", "unknown field"],
    ),
    "negative": (GOOD_DEVICE.replace("tdp_watts: 300", "tdp_watts: -300"), ["field tdp_watts", "greater than 0"]),
    "absurd": (GOOD_DEVICE.replace("48 GB", "48 EB"), ["field memory_bytes", "outside the plausible range"]),
    "unknown_unit": (GOOD_DEVICE.replace("1 TB/s", "1 TB/sec"), ["field memory_bandwidth", "unknown unit 'TB/sec'"]),
    "duplicate_id": (GOOD_DEVICE + GOOD_DEVICE.replace("devices:\n", ""), ["devices[1]", "duplicate id 'my-gpu'"]),
    "dangling_device": (
        """
        instances:
          - id: acme-box
            provider: acme
            name: box
            device: h100-sxn
            device_count: 8
            vcpus: 96
            host_memory_bytes: 1 TB
            pricing: {on_demand_usd_per_hour: 20, regions: [lab]}
            source: quote from vendor
            as_of: 2026-11-30
        """,
        ["acme-box", "field device", "unknown device 'h100-sxn'", "h100-sxm"],
    ),
    # an efficiency family's draw ratio for an op that is no random draw would be ignored by the estimate: refused
    "draw_op": (
        GOOD_EFFICIENCY + "    draw_half_ratio: {aten.relu: 2.0}\n",
        ["my-eff", "field draw_half_ratio.aten.relu", "'aten.bernoulli_' or 'aten.native_dropout'"],
    ),
    "step_order": (
        GOOD_EFFICIENCY + "    optimizer_step: [{step_bytes: 2e8, seconds: 5e-4}, {step_bytes: 1e6, seconds: 1e-4}]\n",
        ["my-eff", "field optimizer_step", "strictly increasing step_bytes"],
    ),
    "top_level": ("gpus: []\n", ["unknown top-level key 'gpus'"]),
    "bad_date": (GOOD_DEVICE.replace("2026-11-30", "last tuesday"), ["field as_of"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_overlay_is_one_line_exit_2(tmp_path, case):
    text, fragments = BAD[case]
    path = write(tmp_path, text)
    result = run_cli("catalog", "list", "--catalog", str(path))
    assert_user_error(result, str(path) if case != "top_level" else "overlay.yaml", *fragments)
    assert result.stdout == ""


@pytest.mark.parametrize("case", sorted(BAD))
def test_validate_names_file_and_field(tmp_path, case):
    text, fragments = BAD[case]
    path = write(tmp_path, text)
    result = run_cli("catalog", "validate", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stdout + result.stderr
    assert any(all(f in line for f in fragments) for line in result.stdout.splitlines()), result.stdout


def test_unreadable_paths(tmp_path):
    assert_user_error(run_cli("catalog", "list", "--catalog", str(tmp_path / "nope.yaml")), "nope.yaml", "no such file")
    not_yaml = tmp_path / "bin.yaml"
    not_yaml.write_bytes(b"\xff\xfe\x00garbage")
    result = run_cli("catalog", "validate", str(not_yaml))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stdout.splitlines()[0].startswith(f"{not_yaml}: cannot read")


def test_library_raises_user_error_not_crash(tmp_path):
    path = write(tmp_path, GOOD_DEVICE.replace("kind: gpu", "kind: quantum"))
    with pytest.raises(UserError) as info:
        load_catalog([path], use_env=False)
    assert "field kind" in info.value.line()


def test_validate_shipped_catalog_ok():
    result = run_cli("catalog", "validate", "catalog")
    assert result.returncode == 0, result.stdout
    assert result.stdout.startswith("ok:")
