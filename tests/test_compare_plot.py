"""`advisor compare --plot`: time and cost of each kind's best option side by side (advisor/render/plots.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT, assert_user_error, run_cli
from test_recommend import write_world

pytest.importorskip("matplotlib")


@pytest.fixture
def world(tmp_path):
    return write_world(tmp_path)


def compare_args(world, *extra: str) -> list[str]:
    overlay, prof = world
    return ["compare", str(prof), "--steps", "1000", "--providers", "testcloud", "--catalog", str(overlay), *extra]


def test_plot_is_written(world, tmp_path):
    png = tmp_path / "cmp.png"
    result = run_cli(*compare_args(world, "--plot", str(png), "-f", "json"))
    assert result.returncode == 0, result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert f"comparison plot written to {png}" in result.stderr
    assert json.loads(result.stdout)["winner"] == "gpu"  # the output is unchanged by the plot


def test_bars_are_each_kinds_best(world, monkeypatch, tmp_path):
    from advisor import api
    from advisor.recommender.model import Constraints
    from advisor.render import plots

    overlay, prof = world
    cat = api.catalog([overlay])
    result = api.compare(api.profile_from(prof), steps=1000, constraints=Constraints(providers=["testcloud"]), cat=cat)
    drawn = {}
    monkeypatch.setattr(plots, "_save", lambda fig, path, plt: drawn.setdefault("fig", fig))
    plots.comparison_png(result, tmp_path / "x.png")
    ax_t, ax_c = drawn["fig"].axes
    best = [r.best for r in reversed(result.rows) if r.best is not None]  # drawn bottom-up, one bar per kind
    assert [p.get_width() for p in ax_t.patches] == pytest.approx([b.total_time_s / 3600 for b in best])
    assert [p.get_width() for p in ax_c.patches] == pytest.approx([b.cost_usd for b in best])
    labels = [t.get_text() for t in ax_t.get_yticklabels()]
    assert labels[::-1][0] == "CPU" and any(label.startswith("GPU\n") for label in labels)  # every kind has a row
    bold = [t.get_text() for t in ax_t.get_yticklabels() if t.get_fontweight() == "bold"]
    assert len(bold) == 1 and bold[0].startswith("GPU")  # the winner


def test_bad_plot_path_fails_before_any_work(world, tmp_path):
    result = run_cli(*compare_args(world, "--plot", str(tmp_path / "missing" / "cmp.png")))
    assert_user_error(result, "--plot folder", "does not exist")


def test_without_matplotlib_one_line(world):
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from advisor.cli import main\n"
        f"sys.argv = ['advisor', *{compare_args(world, '--plot', 'x.png')!r}]\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert_user_error(result, "plots need matplotlib", 'pip install "advisor[plot]"')
