"""The README's Install section opens with the two commands that set advisor up on a fresh machine; .ci/run runs
exactly those (so what a new user types is what CI proves)."""

from __future__ import annotations

from conftest import ROOT


def readme_setup() -> list[str]:
    text = (ROOT / "README.md").read_text()
    install = text[text.index("## Install\n") :]
    block = install[
        install.index("```bash\n") + len("```bash\n") : install.index("```\n", install.index("```bash\n") + 8)
    ]
    return [line for line in block.splitlines() if line.strip()]


def test_ci_runs_the_readme_setup_commands():
    first, second = readme_setup()[:2]
    assert first.startswith("pip install . && advisor ")  # the light install answers a real question
    assert second.startswith('pip install ".[dev]"') and second.endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    block = ci[ci.index("# --- the README's first two commands ---") + 1 : ci.index("# ---")]
    assert block == [first, second]
    assert "ruff check ." in ci and "ruff format --check ." in ci
    assert ci.index("pip install -q torch==2.13.0") < ci.index(first)  # the CPU build on disk, first
