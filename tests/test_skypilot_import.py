"""The SkyPilot importer on the real catalog files in ../shared (skipped where that folder is absent)."""

from __future__ import annotations

import datetime as dt

import pytest
import yaml
from conftest import assert_user_error, run_cli

from advisor.catalog.load import load_catalog
from advisor.catalog.skypilot import import_paths


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(use_env=False)


@pytest.fixture
def imported(skypilot_dir, catalog):
    return import_paths([skypilot_dir], catalog, dt.date(2025, 11, 1))


def by_id(result):
    return {e["id"]: e for e in result.entries}


def test_tpu_rows_without_instance_type_and_placeholder_prices(imported):
    entries = by_id(imported)
    v6e8 = entries["gcp-tpu-v6e-8"]
    assert v6e8["device"] == "tpu-v6e" and v6e8["device_count"] == 8  # v6e slices count chips
    # cheapest region us-east5 (among others): 21.6 $/h for the slice / 8 chips = 2.7 $/chip-hour
    assert v6e8["pricing"]["per"] == "device"
    assert v6e8["pricing"]["on_demand_usd_per_hour"] == pytest.approx(2.7)
    assert 0 < v6e8["pricing"]["spot_usd_per_hour"] < 2.7  # the cheapest spot offer among those regions
    assert "us-east5" in v6e8["pricing"]["regions"]
    assert "asia-east1" not in v6e8["pricing"]["regions"]  # 700.0 placeholder there
    # 32 of the 176 rows of the excerpt have Price exactly 700.0 (csv count; grep -c also hits other columns)
    assert imported.skipped["placeholder price 700.0 (zone without this accelerator)"] == 32


def test_lambda_crlf_names_and_counts(imported):
    entries = by_id(imported)
    h100x8 = entries["lambda-gpu_8x_h100_sxm5"]
    assert (h100x8["device"], h100x8["device_count"]) == ("h100-sxm", 8)
    assert entries["lambda-gpu_1x_h100_pcie"]["device"] == "h100-pcie"  # the instance type picks PCIe
    assert entries["lambda-gpu_8x_a100_80gb_sxm4"]["device"] == "a100-80gb-sxm"
    assert entries["lambda-gpu_1x_gh200"]["device"] == "gh200"
    assert entries["lambda-gpu_1x_a10"]["vcpus"] == 30
    # CPU-only rows have no CPU model in SkyPilot: skipped with a reason, never guessed
    assert imported.skipped["CPU-only row (SkyPilot does not name the CPU model)"] == 51  # 3 types x 17 regions


def test_wrong_skypilot_memory_is_not_used(imported, catalog):
    entries = by_id(imported)
    assert entries["oci-bm.gpu.h200.8"]["device"] == "h200"
    assert "memory_bytes" not in entries["oci-bm.gpu.h200.8"]
    assert catalog.devices["h200"].memory_bytes == pytest.approx(141e9)  # datasheet, not 80 GB


def test_unmapped_accelerators_are_reported(imported):
    assert "P100" in imported.unmapped  # not in our catalog: listed, not guessed


def test_cli_writes_an_overlay_that_loads(tmp_path, skypilot_dir):
    out = tmp_path / "sky.yaml"
    result = run_cli("catalog", "import-skypilot", str(skypilot_dir), "-o", str(out), "--as-of", "2025-11-01")
    assert result.returncode == 0, result.stderr
    data = yaml.safe_load(out.read_text())
    assert all(e["as_of"] == "2025-11-01" for e in data["instances"])
    cat = load_catalog([out], use_env=False)  # the overlay validates against the catalog
    assert cat.instances["gcp-tpu-v6e-8"].hourly_usd() == pytest.approx(21.6)  # 8 chips x 2.7
    shown = run_cli("catalog", "show", "lambda-gpu_8x_h100_sxm5", "--catalog", str(out), "--format", "json")
    assert shown.returncode == 0, shown.stderr


def test_cli_bad_inputs(tmp_path, skypilot_dir):
    out = tmp_path / "missing" / "sky.yaml"
    assert_user_error(run_cli("catalog", "import-skypilot", str(skypilot_dir), "-o", str(out)), "does not exist")
    bogus = tmp_path / "vms.csv"
    bogus.write_text("a,b\n1,2\n")
    out = tmp_path / "sky.yaml"
    assert_user_error(run_cli("catalog", "import-skypilot", str(bogus), "-o", str(out)), "missing column")
    assert not out.exists()  # nothing half-written
    assert_user_error(
        run_cli("catalog", "import-skypilot", str(skypilot_dir), "-o", str(out), "--as-of", "soon"), "--as-of"
    )
