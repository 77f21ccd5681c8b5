"""Run the `advisor` command line inside the test process: the same run_app, exit codes and output as a
user gets, without starting an interpreter (and importing torch) for every case."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache


@dataclass
class Result:
    code: int
    out: str
    err: str

    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip() and not line.startswith("note:")]


@lru_cache(maxsize=1)
def _command():
    """The click command typer builds from the app (what `app()` rebuilds on every call, ~50 ms)."""
    import typer

    from advisor.cli import app

    return typer.main.get_command(app)


def cli(capfd, *args: str) -> Result:
    """`advisor ARGS` in-process; `capfd` is pytest's fixture (file-descriptor capture, as a shell sees it)."""
    from advisor.catalog import load
    from advisor.cli.common import run_app

    load._load_cached.cache_clear()
    capfd.readouterr()
    argv, sys.argv = sys.argv, ["advisor", *map(str, args)]
    try:
        run_app(_command())
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = argv
    out, err = capfd.readouterr()
    return Result(code, out, err)


def user_error(result: Result, *fragments: str) -> str:
    """Exit code 2, one line on stderr naming every fragment, no traceback; the line."""
    assert result.code == 2, (result.code, result.out[-2000:], result.err[-2000:])
    lines = result.error_lines()
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]
