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

from advisor.catalog.schema import AccuracyBand, Catalog, Device, Efficiency, Instance, Provider, Runtime
from advisor.errors import UserError
from advisor.io import read_yaml

ENV_VAR = "ADVISOR_CATALOG"
MAX_PROBLEMS = 200  # problems listed; more are counted (a hostile file could have millions)
SECTIONS: dict[str, type] = {
    "devices": Device,
    "efficiency": Efficiency,
    "instances": Instance,
    "accuracy": AccuracyBand,
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
    """A file itself, or every *.yaml / *.yml below a folder (sorted, so loading is reproducible).

    A folder or subfolder that cannot be listed is an error, never skipped; a .yaml entry that is not a
    regular file (a fifo) is listed, so that reading it gives its one-line error."""
    path = Path(path)
    if not path.is_dir():
        if not path.exists() and not path.is_symlink():
            raise UserError(f"{path}: no such file or folder", "check the --catalog path or $ADVISOR_CATALOG")
        return [path]

    def unreadable(exc: OSError) -> None:
        raise UserError(
            f"{exc.filename or path}: cannot list catalog folder ({exc.strerror or exc})",
            "make it readable, or leave it out of --catalog and $ADVISOR_CATALOG",
        )

    found = []
    for folder, _dirs, names in os.walk(path, onerror=unreadable):
        found += [Path(folder) / n for n in names if n.endswith((".yaml", ".yml"))]
    return sorted(found)


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
    origin: dict[str, dict[str, str]] = field(default_factory=lambda: {s: {} for s in SECTIONS})  # file by id
    files: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    more: int = 0  # problems past MAX_PROBLEMS, counted only

    def problem(self, line: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(line)
        else:
            self.more += 1

    def full(self) -> bool:
        return len(self.problems) >= MAX_PROBLEMS

    def add_file(self, path: Path, overlay: bool) -> None:
        self.files.append(str(path))
        try:
            data = read_yaml(path, "catalog")
        except UserError as exc:
            self.problem(exc.line())
            return
        if data is None:
            return
        if not isinstance(data, dict):
            self.problem(f"{path}: expected a mapping with {', '.join(s + ':' for s in SECTIONS)}")
            return
        for key in data:
            if key not in SECTIONS:
                self.problem(f"{path}: unknown top-level key {key!r}; use {', '.join(SECTIONS)}")
        for section in SECTIONS:
            entries = data.get(section)
            if entries is None:
                continue
            if not isinstance(entries, list):
                self.problem(f"{path}: {section} must be a list of entries")
                continue
            name = str(path)
            for index, entry in enumerate(entries):
                self._add_entry(name, section, index, entry, overlay)

    def _add_entry(self, name: str, section: str, index: int, entry: Any, overlay: bool) -> None:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            self.problem(f"{name}: {section}[{index}]: each entry must be a mapping with an 'id' string")
            return
        key = entry["id"]
        known = self.raw[section]
        if key in known:
            previous = self.origin[section][key]
            if not overlay or previous == name:
                self.problem(f"{name}: {section}[{index}]: duplicate id {key!r} (also in {previous})")
                return
            known[key] = _merge(known[key], entry)
            self.overrides.append(f"{key} from {name}")
        else:
            known[key] = entry  # freshly read: no copy (an override merges into a copy)
        self.origin[section][key] = name

    def build(self) -> Catalog | None:
        models: dict[str, dict] = {s: {} for s in SECTIONS}
        for section, model in SECTIONS.items():
            raw = self.raw[section]
            for key in raw:
                entry, raw[key] = raw[key], None  # the ids stay for the reference checks; the text goes
                if self.full():  # enough problems listed: the rest is counted, not checked
                    self.more += 1
                    continue
                try:
                    models[section][key] = model.model_validate(entry)
                except ValidationError as exc:
                    where = f"{self.origin[section][key]}: {section} {key}"
                    for line in _describe(exc):
                        self.problem(f"{where}: {line}")
        self._check_references(models)
        self._take_kernel_rules(models["efficiency"])
        if self.problems:
            return None
        return Catalog(**models, files=self.files, overrides=self.overrides)

    def _take_kernel_rules(self, efficiency: dict) -> None:
        """Each profile naming `kernel_rules` takes that profile's KERNEL_RULES fields it does not set itself."""
        from advisor.catalog.schema import KERNEL_RULES

        for key, eff in list(efficiency.items()):
            if eff.kernel_rules is None:
                continue
            ref = efficiency.get(eff.kernel_rules)
            if ref is None or ref.kernel_rules is not None:
                what = "unknown efficiency profile" if ref is None else "a profile that takes its own from another"
                where = f"{self.origin['efficiency'][key]}: efficiency {key}"
                self.problem(f"{where}: field kernel_rules: {what} {eff.kernel_rules!r}")
                continue
            taken = {f: getattr(ref, f) for f in KERNEL_RULES if f not in eff.model_fields_set}
            efficiency[key] = eff.model_copy(update=taken)

    def _check_references(self, models: dict[str, dict]) -> None:
        devices, efficiency = models["devices"], models["efficiency"]
        for dev in devices.values():
            if dev.efficiency not in efficiency and dev.efficiency not in self.raw["efficiency"]:
                where = f"{self.origin['devices'][dev.id]}: devices {dev.id}"
                self.problem(f"{where}: field efficiency: unknown efficiency profile {dev.efficiency!r}")
        for inst in models["instances"].values():
            where = f"{self.origin['instances'][inst.id]}: instances {inst.id}"
            dev = devices.get(inst.device)
            if dev is None:
                if inst.device not in self.raw["devices"]:
                    if self.full():  # past the listed problems, no suggestions to look up
                        self.more += 1
                        continue
                    close = _close(inst.device, list(self.raw["devices"]))
                    hint = f" (did you mean {', '.join(close)}?)" if close else ""
                    self.problem(f"{where}: field device: unknown device {inst.device!r}{hint}")
                continue
            if dev.kind != "cpu" and not math.isclose(inst.device_count, round(inst.device_count)):
                self.problem(f"{where}: field device_count: must be whole for a {dev.kind}")


def _close(word: str, options: list[str]) -> list[str]:
    import difflib

    return difflib.get_close_matches(word, options, n=3, cutoff=0.6)


def user_dir() -> Path:
    """The user's own catalog folder, read on every load when it exists: $XDG_CONFIG_HOME/advisor/catalog
    (~/.config/advisor/catalog by default). `advisor calibrate` writes its device there."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "advisor" / "catalog"


def overlay_paths(extra: list[Path] | None = None, use_env: bool = True) -> list[Path]:
    """Overlays in the order applied (later wins): the user folder, $ADVISOR_CATALOG, then `extra`; `~`
    expanded."""
    paths = [Path(p).expanduser() for p in (extra or [])]
    if use_env and os.environ.get(ENV_VAR):
        paths = [Path(p).expanduser() for p in os.environ[ENV_VAR].split(os.pathsep) if p] + paths
    if use_env and user_dir().is_dir():
        paths = [user_dir()] + paths
    return paths


def _build(base: Path | None, overlays: list[Path]) -> _Builder:
    builder = _Builder()
    files = [(p, False) for p in yaml_files(base)] if base is not None else []
    for overlay in overlays:
        try:
            files += [(p, True) for p in yaml_files(overlay)]
        except UserError as exc:
            builder.problem(exc.line())
    # A file is read once: named twice (a folder and a file in it, --catalog and $ADVISOR_CATALOG), it
    # counts at its last place, where it wins; a shipped file named as an overlay is already in the base.
    keys = [os.path.realpath(p) for p, _ in files]
    shipped = {k for k, (_, overlay) in zip(keys, files, strict=True) if not overlay}
    last = {k: i for i, k in enumerate(keys)}
    for i, ((path, overlay), key) in enumerate(zip(files, keys, strict=True)):
        if not overlay or (key not in shipped and last[key] == i):
            builder.add_file(path, overlay=overlay)
    return builder


def _from_env(problem: str) -> str | None:
    """The $ADVISOR_CATALOG entry a problem line starts with, if any."""
    for entry in os.environ.get(ENV_VAR, "").split(os.pathsep):
        if entry and problem.startswith(str(Path(entry).expanduser())):
            return entry
    return None


@lru_cache(maxsize=8)
def _load_cached(overlays: tuple[Path, ...]) -> Catalog:
    builder = _build(shipped_dir(), list(overlays))
    catalog = builder.build()
    if catalog is None:
        first = builder.problems[0]
        more = len(builder.problems) - 1 + builder.more
        extra = f" (and {more} more problem{'s' * (more > 1)})" if more else ""
        env = _from_env(first)
        hint = (
            f"it is read because ${ENV_VAR} names {env}: fix it (advisor catalog validate {env}) or take it "
            f"out of ${ENV_VAR}"
            if env
            else "run 'advisor catalog validate PATH' to see every problem"
        )
        raise UserError(first + extra, hint)
    return catalog


def load_catalog(extra: list[Path] | None = None, use_env: bool = True) -> Catalog:
    """The shipped catalog with overlays from `extra` and $ADVISOR_CATALOG applied, validated."""
    return _load_cached(tuple(p.resolve() for p in overlay_paths(extra, use_env)))


def validate_paths(paths: list[Path]) -> tuple[list[str], Catalog | None]:
    """Every problem found in `paths`, each read as an overlay on the shipped catalog (which is checked
    too); past MAX_PROBLEMS, a last line counts the rest."""
    builder = _build(shipped_dir(), [Path(p).expanduser() for p in paths])
    catalog = builder.build()
    problems = builder.problems + ([f"... and {builder.more} more problems"] if builder.more else [])
    return problems, catalog
