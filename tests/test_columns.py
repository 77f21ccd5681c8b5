"""Tables at 100 columns: columns chosen by priority, names abbreviated by their meaningful tail, money and ranks
never cut, --wide shows everything, JSON unchanged."""

from __future__ import annotations

import json
import re

import pytest
from conftest import run_cli
from rich.console import Console

from advisor.render.columns import Col, fit, print_table, tail

COLS = (
    Col("#", right=True, keep=True),
    Col("name", shorten=tail, min_width=8),
    Col("note", priority=2),
    Col("extra", priority=1),
    Col("cost", right=True, keep=True),
)
ROWS = [["1*", "aten._foreach_addcdiv_", "a fairly long note here", "x" * 12, "$1,234,567"]]


def test_tail_keeps_the_meaningful_end():
    assert tail("aten._foreach_addcdiv_", 30) == "_foreach_addcdiv_"  # the aten. prefix says nothing
    assert tail("aten._foreach_addcdiv_", 10) == "…_addcdiv_"  # 1 + the last 9 characters
    assert tail("layers.*.attention.wq", 14) == "…" + "layers.*.attention.wq"[-13:]  # '….attention.wq'


def test_columns_drop_by_priority_and_names_shorten():
    # natural widths 2 + 22 + 23 + 12 + 10 = 69, plus 3 per column and 1: 85
    cols, rows, widths = fit(COLS, ROWS, 85)
    assert [c.header for c in cols] == ["#", "name", "note", "extra", "cost"] and widths[1] == 22
    cols, rows, widths = fit(COLS, ROWS, 80)  # too wide by 5: 'note' (priority 2) goes first -> 59
    assert [c.header for c in cols] == ["#", "name", "extra", "cost"]
    cols, rows, widths = fit(COLS, ROWS, 40)  # both optional columns go (44), then the name shortens by 4 to 18
    assert [c.header for c in cols] == ["#", "name", "cost"]
    assert rows[0] == ["1*", "_foreach_addcdiv_", "$1,234,567"] and widths == [2, 18, 10]  # 'aten.' dropped: 17
    _, rows, _ = fit(COLS, ROWS, 33)  # name to 11: '…' + 10 characters
    assert rows[0][1] == "…" + "_foreach_addcdiv_"[-10:]
    cols, _, _ = fit(COLS, ROWS, 40, wide=True)
    assert len(cols) == 5  # --wide: every column


def test_money_and_ranks_are_never_cut():
    console = Console(width=40, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    print_table(console, None, COLS, ROWS)
    text = console.export_text()
    assert "$1,234,567" in text and "1*" in text
    assert all(len(line) <= 40 for line in text.splitlines())


@pytest.mark.parametrize("columns", ["100", "140"])
def test_recommend_reads_well_at_the_terminal_width(columns):
    res = run_cli("recommend", "gpt2_124m", "--tokens", "10B", "--deadline", "3d", env={"COLUMNS": columns})
    assert res.returncode == 0, res.stderr
    table_lines = [line for line in res.stdout.splitlines() if line[:1] in "┃│┏┡└"]
    assert table_lines and all(len(line) <= int(columns) for line in table_lines)
    assert "…" not in "".join(table_lines)  # nothing cut with an ellipsis
    rows = [[cell.strip() for cell in line.split("│")] for line in table_lines if line.startswith("│")]
    costs = [cell for row in rows for cell in row if cell.startswith("$")]
    assert len(costs) == sum(1 for row in rows if row[1])  # one whole price per ranked row (not continuations)
    assert all(re.fullmatch(r"\$[\d,]+(\.\d\d)?( †)?", c) for c in costs), costs
    ranks = [line.split("│")[1].strip() for line in table_lines if line.startswith("│")]
    assert "1*" in ranks or "1" in ranks


def test_wide_shows_every_column_and_json_is_unchanged():
    args = ("recommend", "gpt2_124m", "--tokens", "10B", "--deadline", "3d", "--top", "3")
    wide = run_cli(*args, "--wide", env={"COLUMNS": "100"})
    assert "mem headroom" in wide.stdout and "micro × accum" in wide.stdout and "region" in wide.stdout
    narrow = run_cli(*args, env={"COLUMNS": "100"})
    assert "mem headroom" not in narrow.stdout
    j100 = json.loads(run_cli(*args, "-f", "json", env={"COLUMNS": "100"}).stdout)
    j200 = json.loads(run_cli(*args, "-f", "json", env={"COLUMNS": "200"}).stdout)
    for data in (j100, j200):
        data.pop("elapsed_s")
    assert j100 == j200


def test_profile_op_names_show_their_tail(tmp_path):
    from pathlib import Path

    model = Path(__file__).parent / "models" / "tiny_gpt.py"
    res = run_cli("profile", str(model), "--device", "meta", "-o", str(tmp_path / "p.yaml"), env={"COLUMNS": "70"})
    assert res.returncode == 0, res.stderr
    assert "aten._foreac" not in res.stdout and "_foreach_" in res.stdout  # AdamW's foreach ops, named by their tail
    assert all(len(line) <= 70 for line in res.stdout.splitlines() if line[:1] in "┃│┏┡└")


@pytest.mark.parametrize("args", [("catalog", "list", "--provider", "aws"), ("catalog", "list", "--kind", "gpu")])
def test_catalog_lists_fit_100_columns_with_whole_ids_and_prices(args):
    res = run_cli(*args, env={"COLUMNS": "100"})
    assert res.returncode == 0, res.stderr
    table_lines = [line for line in res.stdout.splitlines() if line[:1] in "┃│┏┡└"]
    assert table_lines and all(len(line) <= 100 for line in table_lines)
    assert "…" not in "".join(table_lines)
    if "aws" in args:
        assert "aws-p5.48xlarge" in res.stdout and "on-demand" in res.stdout
