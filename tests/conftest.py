from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

try:  # property tests (tests/test_properties.py): 1,000 fixed examples each in CI, more on request
    from hypothesis import settings

    settings.register_profile("ci", max_examples=1000, deadline=None, derandomize=True, database=None)
    settings.register_profile("explore", max_examples=10_000, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # pragma: no cover - hypothesis is a dev dependency
    pass
SHARED = ROOT.parent / "shared"
SKYPILOT = SHARED / "data" / "skypilot-catalog"


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run `python -m advisor ARGS` as a user would, capturing output."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("ADVISOR_DEBUG", None)
    full_env.setdefault("ADVISOR_CATALOG", "")
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd or ROOT,
        timeout=300,
    )


def assert_user_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit code 2, one line on stderr, no traceback, and every fragment named in it."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("note:")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.fixture(autouse=True)
def _no_env_overlay(monkeypatch, tmp_path_factory):
    # Neither $ADVISOR_CATALOG nor a calibration the developer made (~/.config/advisor/catalog) reaches a test.
    monkeypatch.delenv("ADVISOR_CATALOG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg")))
    from advisor.catalog import load

    load._load_cached.cache_clear()


@pytest.fixture
def skypilot_dir() -> Path:
    if not SKYPILOT.is_dir():
        pytest.skip(f"SkyPilot sample catalogs not found at {SKYPILOT} (../shared is absent)")
    return SKYPILOT
