"""A non-editable wheel carries the shipped catalog and profiles as package data."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

import pytest
from conftest import ROOT


def test_wheel_carries_catalog(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is needed to copy the tracked tree")
    # Build from a copy of the tree so that the checkout stays clean.
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "venv", "__pycache__", "*.egg-info"))
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = wheels.glob("advisor-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "catalog").rglob("*.yaml"))
    assert shipped and all(f"advisor/_data/{p}" in names for p in shipped)
    # the light install: what `pip install advisor` pulls (requirements without an extra marker) has no torch
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    required = [
        line[len("Requires-Dist:") :].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:")
    ]
    light = [r for r in required if "extra ==" not in r]
    assert light and not [r for r in light if r.lower().startswith(("torch", "nvidia", "transformers"))], light
    assert any(r.startswith("torch") and "extra == 'torch'" in r.replace('"', "'") for r in required), required
    # Install it alone in a target folder and run it from elsewhere: the data must come from the wheel.
    target = tmp_path / "site"
    inst = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert inst.returncode == 0, inst.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(target), "ADVISOR_CATALOG": ""}
    code = (
        "import advisor.catalog.load as l, sys; from advisor.cli import main; "
        "print(l.shipped_dir()); sys.argv=['advisor','catalog','show','h100-sxm','-f','json']; main()"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr
    first = run.stdout.splitlines()[0]
    assert first.startswith(str(target)) and first.endswith("advisor/_data/catalog")
    assert '"id": "h100-sxm"' in run.stdout
