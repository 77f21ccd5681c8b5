"""Reading catalog files: the shipped catalog, user overlays, checks that name file and field.

Entries are plain YAML (safe loading only). An overlay entry whose id is new is added; one whose id
exists is merged field by field onto the existing entry (so a negotiated price needs one line), and the
override is recorded for reporting.
"""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from advisor.catalog.schema import Catalog, Device, Efficiency, Instance, Provider, Runtime
from advisor.errors import UserError
from advisor.io import read_yaml

ENV_VAR = "ADVISOR_CATALOG"
SECTIONS: dict[str, type] = {
    "devices": Device,
    "efficiency": Efficiency,
    "instances": Instance,
    "providers": Provider,
    "runtime": Runtime,
}


def shipped_dir() -> Path:
    """The catalog shipped with advisor: package data in a wheel, the repository's catalog/ otherwise."""
    packaged = Path(__file__).resolve().parent.parent / "_data" / "catalog"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "catalog"


def yaml_files(path: Path) -> list[Path]:
    """A file itself, or every *.yaml / *.yml below a folder (sorted, so loading is reproducible)."""
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    if not path.exists():
        raise UserError(f"{path}: no such file or folder", "check the --catalog path or $ADVISOR_CATALOG")
    return [path]


def _field_path(loc: tuple) -> str:
    return ".".join(str(p) for p in loc) or "(entry)"


def _describe(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field (see catalog/README.md for the fields)"
        elif err["type"] == "missing":
            msg = "missing required field"
        out.append(f"field {_field_path(err['loc'])}: {msg}")
    return out


def _merge(base: dict, over: dict) -> dict:
    merged = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


@dataclass
class _Builder:
    """Accumulates raw entries from files in order; collects every problem instead of stopping."""

    raw: dict[str, dict[str, dict]] = field(default_factory=lambda: {s: {} for s in SECTIONS})
    origin: dict[tuple[str, str], str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def add_file(self, path: Path, overlay: bool) -> None:
        self.files.append(str(path))
        try:
            data = read_yaml(path)
        except UserError as exc:
            self.problems.append(exc.line())
            return
        if data is None:
            return
        if not isinstance(data, dict):
            self.problems.append(f"{path}: expected a mapping with {', '.join(s + ':' for s in SECTIONS)}")
            return
        for key in data:
            if key not in SECTIONS:
                self.problems.append(f"{path}: unknown top-level key {key!r}; use {', '.join(SECTIONS)}")
        for section in SECTIONS:
            entries = data.get(section)
            if entries is None:
                continue
            if not isinstance(entries, list):
                self.problems.append(f"{path}: {section} must be a list of entries")
                continue
            for index, entry in enumerate(entries):
                self._add_entry(path, section, index, entry, overlay)

    def _add_entry(self, path: Path, section: str, index: int, entry: Any, overlay: bool) -> None:
        where = f"{path}: {section}[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            self.problems.append(f"{where}: each entry must be a mapping with an 'id' string")
            return
        key = entry["id"]
        known = self.raw[section]
        if key in known:
            previous = self.origin[(section, key)]
            if not overlay or previous == str(path):
                self.problems.append(f"{where}: duplicate id {key!r} (also in {previous})")
                return
            known[key] = _merge(known[key], entry)
            self.overrides.append(f"{key} from {path}")
        else:
            known[key] = dict(entry)
        self.origin[(section, key)] = str(path)

    def build(self) -> Catalog | None:
        models: dict[str, dict] = {s: {} for s in SECTIONS}
        for section, model in SECTIONS.items():
            for key, entry in self.raw[section].items():
                try:
                    models[section][key] = model(**entry)
                except ValidationError as exc:
                    where = f"{self.origin[(section, key)]}: {section} {key}"
                    self.problems.extend(f"{where}: {line}" for line in _describe(exc))
        self._check_references(models)
        if self.problems:
            return None
        return Catalog(**models, files=self.files, overrides=self.overrides)

    def _check_references(self, models: dict[str, dict]) -> None:
        devices, efficiency = models["devices"], models["efficiency"]
        for dev in devices.values():
            if dev.efficiency not in efficiency and dev.efficiency not in self.raw["efficiency"]:
                where = f"{self.origin[('devices', dev.id)]}: devices {dev.id}"
                self.problems.append(f"{where}: field efficiency: unknown efficiency profile {dev.efficiency!r}")
        for inst in models["instances"].values():
            where = f"{self.origin[('instances', inst.id)]}: instances {inst.id}"
            dev = devices.get(inst.device)
            if dev is None:
                if inst.device not in self.raw["devices"]:
                    close = _close(inst.device, list(self.raw["devices"]))
                    hint = f" (did you mean {', '.join(close)}?)" if close else ""
                    self.problems.append(f"{where}: field device: unknown device {inst.device!r}{hint}")
                continue
            if dev.kind != "cpu" and not math.isclose(inst.device_count, round(inst.device_count)):
                self.problems.append(f"{where}: field device_count: must be whole for a {dev.kind}")


def _close(word: str, options: list[str]) -> list[str]:
    import difflib

    return difflib.get_close_matches(word, options, n=3, cutoff=0.6)


def user_dir() -> Path:
    """The user's own catalog folder, read on every load when it exists: $XDG_CONFIG_HOME/advisor/catalog
    (~/.config/advisor/catalog by default). `advisor calibrate` writes its device there."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "advisor" / "catalog"


def overlay_paths(extra: list[Path] | None = None, use_env: bool = True) -> list[Path]:
    """Overlays in the order applied (later wins): the user folder, $ADVISOR_CATALOG, then `extra`."""
    paths = [Path(p) for p in (extra or [])]
    if use_env and os.environ.get(ENV_VAR):
        paths = [Path(p) for p in os.environ[ENV_VAR].split(os.pathsep) if p] + paths
    if use_env and user_dir().is_dir():
        paths = [user_dir()] + paths
    return paths


def _build(base: Path | None, overlays: list[Path]) -> _Builder:
    builder = _Builder()
    if base is not None:
        for path in yaml_files(base):
            builder.add_file(path, overlay=False)
    for overlay in overlays:
        try:
            files = yaml_files(overlay)
        except UserError as exc:
            builder.problems.append(exc.line())
            continue
        for path in files:
            builder.add_file(path, overlay=True)
    return builder


@lru_cache(maxsize=8)
def _load_cached(overlays: tuple[Path, ...]) -> Catalog:
    builder = _build(shipped_dir(), list(overlays))
    catalog = builder.build()
    if catalog is None:
        more = len(builder.problems) - 1
        extra = f" (and {more} more problem{'s' * (more > 1)}: run 'advisor catalog validate')" if more else ""
        raise UserError(builder.problems[0] + extra)
    return catalog


def load_catalog(extra: list[Path] | None = None, use_env: bool = True) -> Catalog:
    """The shipped catalog with overlays from `extra` and $ADVISOR_CATALOG applied, validated."""
    return _load_cached(tuple(p.resolve() for p in overlay_paths(extra, use_env)))


def validate_paths(paths: list[Path]) -> tuple[list[str], Catalog | None]:
    """Every problem found in `paths`, each read as an overlay on the shipped catalog (which is checked too)."""
    shipped = shipped_dir().resolve()
    # Paths inside the shipped catalog are already part of the base: check them once, not twice.
    others = [p for p in paths if not Path(p).resolve().is_relative_to(shipped)]
    builder = _build(shipped, others)
    catalog = builder.build()
    return builder.problems, catalog
