"""Import SkyPilot price catalogs (`vms.csv`) as an advisor instance overlay.

SkyPilot caches one `vms.csv` per cloud under `~/.sky/catalogs/<version>/<cloud>/`. Columns differ in
order per cloud, so they are read by header name. Each row is one instance type in one zone. Known
defects of the upstream data that this importer survives (see tests):

- GCP TPU rows have no InstanceType; the slice ('tpu-v6e-8') is in AcceleratorName and the count is 1.
- A price of 700.0 is a placeholder for zones that do not offer the TPU; more generally, a price over
  10x the median of the same instance type elsewhere is taken as a placeholder and skipped.
- GPU memory in SkyPilot's metadata and GpuInfo is sometimes wrong (H200 and B200 as 80 GB), so device
  figures always come from the advisor catalog; SkyPilot gives only names, counts, prices and regions.
- Accelerator names are spelled differently across clouds; they are matched through catalog aliases.

The overlay holds only entries the catalog loader accepts: a row with a count that is not a positive whole
number, or a price that is not a finite positive number, is skipped, and so is an entry that would not
validate as an instance (a price over the schema's $10,000/h, an id too long); every skip is counted by its
reason in the summary.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from advisor import __version__
from advisor.catalog.lookup import find_device
from advisor.catalog.schema import Catalog, Device, Instance
from advisor.errors import UserError
from advisor.io import dump_yaml, read_text, write_atomic

REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Price", "Region")
PLACEHOLDER_PRICES = (700.0,)  # GCP's marker for zones without the TPU (SkyPilot catalog README)
OUTLIER_FACTOR = 10.0
_TPU = re.compile(r"^tpu-(v\d{1,3}[a-z]*)-(\d{1,6})$")


@dataclass
class ImportResult:
    entries: list[dict]
    files: list[str]
    skipped: Counter = field(default_factory=Counter)
    unmapped: Counter = field(default_factory=Counter)
    rows: int = 0

    def summary(self, output: Path) -> dict:
        return {
            "output": str(output),
            "files": self.files,
            "rows": self.rows,
            "instances": len(self.entries),
            "offers": sum(len(e["pricing"]["regions"]) for e in self.entries),
            "skipped_rows": sum(self.skipped.values()),
            "skipped_by_reason": dict(self.skipped.most_common()),
            "unmapped_accelerators": sorted(self.unmapped),
        }


def find_csvs(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(p for p in path.rglob("vms*.csv") if p.is_file())
            if not found:
                raise UserError(f"{path}: no vms*.csv files in this folder", "point at ~/.sky/catalogs/<version>")
            out.extend(found)
        elif path.exists():
            out.append(path)  # a file, or something the reader refuses with its own line (a fifo)
        else:
            raise UserError(f"{path}: no such file or folder", "give SkyPilot vms.csv files or their folders")
    return out


def _rows(path: Path):
    """The rows of one vms.csv as dicts by header name, read through advisor.io (a regular file, size
    limit) and streamed, so memory does not grow with the row count."""
    text = read_text(path, "SkyPilot vms.csv")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames or []
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise UserError(
                f"{path}: not a SkyPilot vms.csv: missing column(s) {', '.join(missing)}",
                "give a vms.csv from ~/.sky/catalogs/<version>/<cloud>/",
            )
        yield from reader
    except csv.Error as exc:
        raise UserError(f"{path}:{reader.line_num}: cannot read CSV ({exc})", "check the file") from None


def _number(text: str | None) -> float | None:
    """A finite number from a cell; None for an empty, unreadable, NaN or infinite one."""
    try:
        value = float(text) if text not in (None, "") else None
    except (ValueError, TypeError):
        return None
    return value if value is not None and math.isfinite(value) else None


def _cell(row: dict, name: str) -> str | None:
    value = row.get(name)
    return value if isinstance(value, str) else None  # a short row gives None, a long one a list


def _device_for(catalog: Catalog, accelerator: str, instance_type: str) -> tuple[Device, float] | None:
    """The catalog device an accelerator name means, and the multiplier from SkyPilot's count to devices.

    Devices name their SkyPilot spelling in the catalog (`skypilot_accelerator`); a name no device claims is
    looked up through ids and aliases. TPU rows name a slice ('tpu-v5p-8'): its size counts TensorCores or
    chips as the device's `tensorcores_per_chip` says."""
    tpu = _TPU.match(accelerator.lower())
    name, size = (f"tpu-{tpu.group(1)}", int(tpu.group(2))) if tpu else (accelerator, 1)
    claimed = [
        d for d in catalog.devices.values() if d.skypilot_accelerator and d.skypilot_accelerator.lower() == name.lower()
    ]
    if claimed:
        device = min(claimed, key=lambda d: d.id)
    else:
        try:
            device = find_device(catalog, name)
        except UserError:
            return None
    # SkyPilot names the chip, not the form factor: let the instance type choose PCIe or SXM.
    lowered = instance_type.lower()
    for form, other in (("pcie", "sxm"), ("sxm", "pcie")):
        if form in lowered and other in device.id:
            sibling = catalog.devices.get(device.id.replace(other, form))
            if sibling is not None:
                device = sibling
    per_count = size / (device.tensorcores_per_chip or 1) if tpu else 1.0
    return device, per_count


def import_paths(paths: list[Path], catalog: Catalog, as_of: dt.date | None = None) -> ImportResult:
    files = find_csvs(paths)
    result = ImportResult(entries=[], files=[str(f) for f in files])
    offers: dict[tuple, list[dict]] = defaultdict(list)
    devices: dict[tuple, tuple[Device, float] | None] = {}  # looked up once per name and form factor
    for path in files:
        cloud = re.sub(r"[^a-z0-9._+-]+", "-", path.parent.name.lower()).strip("-._+") or "skypilot"
        date = as_of or dt.date.fromtimestamp(path.stat().st_mtime)
        for row in _rows(path):
            result.rows += 1
            reason = _add_row(row, cloud, date, str(path), catalog, offers, result, devices)
            if reason:
                result.skipped[reason] += 1
    for key, rows in sorted(offers.items()):
        entry = _entry(key, rows, result, catalog)
        if entry is not None:
            result.entries.append(entry)
    return result


def _add_row(row, cloud, date, path, catalog, offers, result, devices) -> str | None:
    accelerator = (_cell(row, "AcceleratorName") or "").strip()
    if not accelerator:
        return "CPU-only row (SkyPilot does not name the CPU model)"
    instance_type = (_cell(row, "InstanceType") or "").strip() or accelerator  # GCP TPU rows have none
    lowered = instance_type.lower()
    key = (accelerator, "pcie" in lowered, "sxm" in lowered)  # all _device_for reads of the instance type
    if key not in devices:
        devices[key] = _device_for(catalog, accelerator, instance_type)
    mapped = devices[key]
    if mapped is None:
        result.unmapped[accelerator] += 1
        return "accelerator with no catalog device"
    device, per_count = mapped
    given = _cell(row, "AcceleratorCount")
    count = (1.0 if given in (None, "") else (_number(given) or 0.0)) * per_count
    if not count > 0 or (device.kind != "cpu" and count != round(count)):
        return "accelerator count not a positive whole number"
    price = _number(_cell(row, "Price"))
    if price is None or price <= 0:
        return "no on-demand price (empty, zero, negative or not a finite number)"
    if price in PLACEHOLDER_PRICES:
        return "placeholder price 700.0 (zone without this accelerator)"
    vcpus, memory = _number(_cell(row, "vCPUs")), _number(_cell(row, "MemoryGiB"))
    offers[(cloud, instance_type, device.id, count)].append(
        {
            "region": (_cell(row, "Region") or "").strip() or "unknown",
            "price": price,
            "spot": _number(_cell(row, "SpotPrice")),
            "vcpus": int(vcpus) if vcpus is not None and 1 <= vcpus <= 4096 else None,
            "memory_gib": memory if memory is not None and 0.001 <= memory <= 1e5 else None,
            "date": date,
            "file": path,
            "tpu": device.kind == "tpu",
        }
    )
    return None


def _entry(key: tuple, rows: list[dict], result: ImportResult, catalog: Catalog) -> dict | None:
    cloud, instance_type, device_id, count = key
    median = statistics.median(r["price"] for r in rows)
    kept = [r for r in rows if r["price"] <= OUTLIER_FACTOR * median]
    if len(kept) < len(rows):
        result.skipped["price over 10x the median of the same instance type (placeholder)"] += len(rows) - len(kept)
    cheapest = min(r["price"] for r in kept)
    best = [r for r in kept if r["price"] == cheapest]
    regions = sorted({r["region"] for r in best})
    spots = [r["spot"] for r in best if r["spot"] is not None and 0 < r["spot"] <= cheapest]
    tpu = best[0]["tpu"]
    per_device = tpu  # TPU slices are priced per chip-hour, as Google sells them
    scale = 1.0 / count if per_device else 1.0
    prices = sorted({r["price"] for r in kept})
    pricing: dict = {"on_demand_usd_per_hour": round(cheapest * scale, 6), "regions": regions}
    if spots:
        pricing["spot_usd_per_hour"] = round(min(spots) * scale, 6)
    if per_device:
        pricing["per"] = "device"
    vcpus = next((r["vcpus"] for r in best if r["vcpus"]), None)
    memory = next((r["memory_gib"] for r in best if r["memory_gib"]), None)
    entry: dict = {
        "id": re.sub(r"[^a-z0-9._+-]+", "-", f"{cloud}-{instance_type}".lower()),
        "provider": cloud,
        "name": instance_type,
        "device": device_id,
        "device_count": int(count) if count == int(count) else count,
        "pricing": pricing,
        "source": f"SkyPilot catalog {best[0]['file']} (advisor {__version__} import-skypilot)",
        "as_of": max(r["date"] for r in kept).isoformat(),
        "notes": (
            f"imported from SkyPilot; cheapest of {len(kept)} offers in {len({r['region'] for r in kept})} "
            f"regions (${prices[0]:g}-${prices[-1]:g}/h for the whole instance)"
        ),
    }
    device = catalog.devices[device_id]
    if entry["id"] not in catalog.instances and count > 1:
        # SkyPilot does not say how the devices are joined: assume the device's own link (NVLink, ICI)
        # or else its host link (PCIe), and say so.
        link = device.device_link or device.host_link
        if link is not None:
            entry["fabric"] = link.model_dump(mode="json")
            entry["notes"] += f"; fabric assumed from the device ({link.type})"
    if vcpus:
        entry["vcpus"] = vcpus
    if memory:
        entry["host_memory_bytes"] = f"{memory:g} GiB"
    try:  # write only what the catalog loader will accept
        Instance.model_validate(entry)
    except ValidationError as exc:
        err = exc.errors(include_url=False, include_input=False)[0]
        field = ".".join(str(p) for p in err["loc"])
        result.skipped[f"would not validate ({field}: {err['msg'].removeprefix('Value error, ')})"] += len(kept)
        return None
    return entry


def write_overlay(result: ImportResult, output: Path) -> Path:
    header = (
        f"# advisor instance overlay imported from SkyPilot price catalogs by advisor {__version__}\n"
        f"# on {dt.date.today().isoformat()} from: {', '.join(result.files)}\n"
        "# Use it with --catalog PATH or $ADVISOR_CATALOG. Prices move: each entry keeps its as_of date.\n"
    )
    return write_atomic(output, header + dump_yaml({"instances": result.entries}), "overlay")
