"""Shell completion of names: devices, instances, providers, kinds, profiles and models.

`advisor --install-completion` (typer's) installs a script that calls advisor back on every TAB; these functions
answer it. They must be fast: they read the catalog's YAML for its ids and names (shipped files, the user folder,
$ADVISOR_CATALOG) without validating it, never import torch, and swallow every error (a broken overlay must not
break the shell: the command itself reports it).
"""

from __future__ import annotations

from pathlib import Path

from advisor.vocab import DEVICE_KINDS, HF_TASKS

Item = tuple[str, str]  # (value, help shown by zsh and fish)


def _catalog_entries() -> tuple[list[Item], list[Item], list[Item]]:
    """(devices, instances, providers) as (value, help), in catalog order, overlays included. Instances come by id
    ('aws-p5.48xlarge') and by their provider's own name ('p5.48xlarge'), which -H also takes."""
    from advisor.catalog.load import overlay_paths, shipped_dir, yaml_files
    from advisor.io import read_yaml

    devices: dict[str, str] = {}
    instances: dict[str, str] = {}
    names: dict[str, str] = {}
    providers: dict[str, int] = {}
    for root in (shipped_dir(), *overlay_paths()):
        try:
            files = yaml_files(root)
        except Exception:  # noqa: BLE001 - completion never fails
            continue
        for path in files:
            try:
                data = read_yaml(path)
            except Exception:  # noqa: BLE001
                continue
            if not isinstance(data, dict):
                continue
            for entry in data.get("devices") or []:
                if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                    devices[entry["id"]] = str(entry.get("name") or devices.get(entry["id"], ""))
            for entry in data.get("instances") or []:
                if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                    instances[entry["id"]] = f"instance of {entry.get('provider', '?')}"
                    if isinstance(entry.get("name"), str):
                        names[entry["name"]] = f"instance {entry['id']}"
                    if isinstance(entry.get("provider"), str):
                        providers[entry["provider"]] = providers.get(entry["provider"], 0) + 1
    return (
        list(devices.items()),
        list(instances.items()) + list(names.items()),
        [(p, f"{n} instance{'s' * (n != 1)}") for p, n in providers.items()],
    )


def _match(items: list[Item], incomplete: str) -> list[Item]:
    low = incomplete.lower()
    seen: set[str] = set()
    out = []
    for value, help_text in items:
        if value.lower().startswith(low) and value not in seen:
            seen.add(value)
            out.append((value, help_text))
    return out


def _list_item(items: list[Item], incomplete: str) -> list[Item]:
    """Completion of the last element of a comma-separated list ('aws,gc' -> 'aws,gcp')."""
    head, sep, last = incomplete.rpartition(",")
    prefix = head + sep
    done = set(head.split(",")) if head else set()
    return [(prefix + v, h) for v, h in _match(items, last) if v not in done]


def _files(incomplete: str, suffixes: tuple[str, ...]) -> list[Item]:
    """Files and folders that start with `incomplete` (folders end in '/', so TAB goes on into them)."""
    try:
        base = Path(incomplete).expanduser()
        folder, stem = (base, "") if incomplete.endswith("/") else (base.parent, base.name)
        out = []
        for p in sorted(folder.iterdir()):
            if not p.name.startswith(stem) or (p.name.startswith(".") and not stem.startswith(".")):
                continue
            shown = str(Path(incomplete[: len(incomplete) - len(stem)] + p.name)) if incomplete else p.name
            if p.is_dir():
                out.append((shown + "/", "folder"))
            elif p.suffix in suffixes:
                out.append((shown, "file"))
        return out
    except Exception:  # noqa: BLE001
        return []


def hardware(incomplete: str) -> list[Item]:
    """-H: device ids, instance ids and instances' own names ('p5.48xlarge')."""
    try:
        devices, instances, _ = _catalog_entries()
    except Exception:  # noqa: BLE001
        return []
    return _match(devices + instances, incomplete)


def device_or_kind_list(incomplete: str) -> list[Item]:
    """--devices h100,a100 or gpu,tpu."""
    try:
        devices, _, _ = _catalog_entries()
    except Exception:  # noqa: BLE001
        devices = []
    return _list_item([(k, "every device of this kind") for k in DEVICE_KINDS] + devices, incomplete)


def provider_list(incomplete: str) -> list[Item]:
    """--providers aws,gcp."""
    try:
        return _list_item(_catalog_entries()[2], incomplete)
    except Exception:  # noqa: BLE001
        return []


def provider(incomplete: str) -> list[Item]:
    try:
        return _match(_catalog_entries()[2], incomplete)
    except Exception:  # noqa: BLE001
        return []


def kind(incomplete: str) -> list[Item]:
    return _match([(k, "device kind") for k in DEVICE_KINDS], incomplete)


def task(incomplete: str) -> list[Item]:
    return _match([(t, "Hugging Face task") for t in HF_TASKS], incomplete)


def profile(incomplete: str) -> list[Item]:
    """A shipped profile's name, or a profile YAML."""
    try:
        from advisor.api import shipped_profiles_dir

        shipped = [(p.stem, "shipped profile") for p in sorted(shipped_profiles_dir().glob("*.yaml"))]
    except Exception:  # noqa: BLE001
        shipped = []
    return _match(shipped, incomplete) + _files(incomplete, (".yaml", ".yml"))


def model(incomplete: str) -> list[Item]:
    """A shipped model's name, a source prefix (hf:, timm:, torchvision:), or a model file."""
    prefixes = [("hf:", "Hugging Face: hf:ID or hf:PATH/config.json"), ("timm:", "timm:NAME")]
    prefixes.append(("torchvision:", "torchvision:NAME"))
    if incomplete.startswith("hf:"):
        return [("hf:" + v, h) for v, h in _files(incomplete[3:], (".json",))]
    try:
        from advisor.profiler.sources.shipped import shipped_names

        shipped = [(n, "shipped model") for n in shipped_names()]
    except Exception:  # noqa: BLE001
        shipped = []
    return _match(prefixes + shipped, incomplete) + _files(incomplete, (".py",))
