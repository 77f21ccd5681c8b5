"""Property-based tests (Hypothesis) of everything that reads what other people write, and of the writer.

Each test states its invariant in its docstring. The CI profile (tests/conftest.py) runs 1,000 examples of
each, derandomized (the same examples every run, no database written); `HYPOTHESIS_PROFILE=explore` runs
10,000 fresh ones. Inputs are made in-process and checked through the library's own entry points (the
CLI's run_app for `show`), so the examples cost milliseconds, not interpreter starts.
"""

from __future__ import annotations

import atexit
import copy
import errno
import json
import math
import os
import shutil
import stat
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inproc import cli

from advisor import io, units
from advisor.catalog.load import _build
from advisor.errors import UserError

# ---- hostile values and mutations of a valid document ----

WEIRD_TEXT = ["fp7", "int65", "-1", "2026-13-45", "1e999", "nan", "", "h100", "1h-30m", "3", "$-5", "80 EB", "0.5"]
hostile = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1, 0.5, -0.0, 1e300, -1e300, 10**15 + 1]),
    st.sampled_from(WEIRD_TEXT),
    st.text(max_size=12),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.sampled_from(["a", "id", "fixed"]), st.integers(-3, 3), max_size=2),
)


def paths(doc, prefix=()):
    """Every place in a plain document: (path, value)."""
    yield prefix, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, (*prefix, i))


def put(doc, path, value):
    if not path:
        return value
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

# Text edits that no dumped structure can express: duplicate keys, aliases, tags, huge integers, cut files.
RAW_EDITS = [
    lambda t, i: t[:i],
    lambda t, i: t[:i] + "\n" + t[:i].splitlines()[-1] + "\n" + t[i:] if t[:i].splitlines() else t,
    lambda t, i: t[:i] + " &a" + t[i:],
    lambda t, i: t[:i] + " *a" + t[i:],
    lambda t, i: t[:i] + " !!python/object:os.system " + t[i:],
    lambda t, i: t[:i] + "9" * 5000 + t[i:],
    lambda t, i: t[:i] + "\t\x00\ufeff" + t[i:],
    lambda t, i: "x: &a [1, 1]\ny: &b [*a, *a, *a, *a]\nz: [*b, *b, *b, *b]\n" + t,
]


def mutated(base: dict) -> st.SearchStrategy[str]:
    """YAML text of `base` with a few values replaced by hostile ones, then maybe edited as text. Written
    as JSON (a YAML subset, and fast: the pure-Python YAML representer would dominate the test's time) or,
    one time in four, as block YAML."""
    base = io.plain(base)  # dates as text, as a file holds them
    places = [p for p, _ in paths(base)]

    @st.composite
    def build(draw) -> str:
        doc = copy.deepcopy(base)
        for _ in range(draw(st.integers(0, 3))):
            try:
                doc = put(doc, draw(st.sampled_from(places)), draw(hostile))
            except (KeyError, IndexError, TypeError):
                pass  # the place lay inside a value an earlier edit replaced
        form = draw(st.sampled_from(["json", "json", "json-indented", "yaml"]))
        try:
            if form == "yaml":
                text = yaml.dump(doc, Dumper=DUMPER, sort_keys=False, default_flow_style=False)
            else:
                text = json.dumps(doc, indent=2 if form == "json-indented" else None)
        except (ValueError, TypeError, yaml.YAMLError):
            text = "{}"
        for _ in range(draw(st.integers(0, 2))):
            edit = draw(st.sampled_from(RAW_EDITS))
            text = edit(text, draw(st.integers(0, len(text))))
        return text

    return build()


# One file rewritten per example, in memory where the system has a tmpfs (rewriting a file on a disk
# costs milliseconds, more than the example).
_SHM = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
SCRATCH = Path(tempfile.mkdtemp(prefix="advisor-properties-", dir=_SHM))
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)


def write(text: str, name: str) -> Path:
    path = SCRATCH / name
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


# ---- unit parsers ----

KINDS = list(units.UNITS)
unit_text = st.builds(
    lambda sign, number, space, unit: f"{sign}{number}{space}{unit}",
    st.sampled_from(["", "-", "+", "$"]),
    st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers().map(str), st.text(max_size=4)),
    st.sampled_from(["", " ", "  "]),
    st.one_of(st.sampled_from(sorted({u for table in units.UNITS.values() for u in table})), st.text(max_size=4)),
)


@given(
    value=st.one_of(unit_text, st.text(max_size=30), st.floats(), st.integers(), st.booleans(), st.none()),
    kind=st.sampled_from(KINDS),
)
def test_unit_parsers_give_a_finite_number_or_one_user_error(value, kind):
    """units.parse: a finite float, or a UserError whose one line starts with what was being read; never
    another exception. parse_positive (what the command line uses): a positive finite float, or a
    UserError; a duration it accepts from text always carried a unit (a bare '3' is refused)."""
    try:
        number = units.parse(value, kind, "--thing")
    except UserError as exc:
        assert exc.line().startswith("--thing") and "\n" not in exc.line()
    else:
        assert isinstance(number, float) and math.isfinite(number)
    try:
        positive = units.parse_positive(value, kind, "--thing")
    except UserError:
        pass
    else:
        assert positive > 0 and math.isfinite(positive)
        if kind == "duration" and isinstance(value, str):
            assert any(c.isalpha() for c in value)


@given(
    number=st.floats(min_value=1e-3, max_value=1e6),
    kind=st.sampled_from(KINDS),
    data=st.data(),
)
def test_unit_parsers_scale_by_the_unit(number, kind, data):
    """A number written with a known unit parses to the number times the unit's factor."""
    unit = data.draw(st.sampled_from(sorted(u for u in units.UNITS[kind] if u)))
    text = f"{number!r} {unit}" if kind != "money" else f"${number!r}{unit}"
    assert units.parse(text, kind, "x") == pytest.approx(number * units.UNITS[kind][unit], rel=1e-12)


# ---- the catalog loader ----

SHIPPED = io.read_yaml(ROOT / "catalog" / "devices" / "nvidia.yaml")
OVERLAY = {
    "devices": [next(d for d in SHIPPED["devices"] if d["id"] == "h100-sxm")],
    "efficiency": [
        next(e for e in io.read_yaml(ROOT / "catalog" / "efficiency.yaml")["efficiency"] if e["id"] == "nvidia-hopper")
    ],
    "instances": [
        next(
            i
            for i in io.read_yaml(ROOT / "catalog" / "instances" / "aws.yaml")["instances"]
            if i["id"] == "aws-p5.48xlarge"
        )
    ],
}


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(mutated(OVERLAY), st.text(max_size=200)))
def test_catalog_loader_loads_or_lists_problems(text):
    """Any catalog file: the loader returns a catalog whose every figure is finite and in range, or a list
    of one-line problems naming the file; it never raises."""
    path = write(text, "overlay.yaml")
    builder = _build(None, [path])
    catalog = builder.build()
    if catalog is None:
        assert builder.problems and all(p.startswith(str(path)) and "\n" not in p for p in builder.problems)
        return
    assert not builder.problems
    for inst in catalog.instances.values():
        assert math.isfinite(inst.pricing.on_demand_usd_per_hour) and inst.device_count > 0
        assert inst.device in catalog.devices
    for dev in catalog.devices.values():
        assert math.isfinite(dev.memory_bandwidth) and dev.memory_bandwidth > 0


# ---- the profile and export readers ----

_lstm = io.read_yaml(ROOT / "profiles" / "lstm.yaml")
PROFILE = {**_lstm, "ops": _lstm["ops"][:6]}  # six ops: every field of a record, a few milliseconds each


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(text=mutated(PROFILE))
def test_profile_reader_gives_a_valid_profile_or_one_user_error(text):
    """Any profile file: load_profile returns a profile, or raises a one-line UserError naming the file. A
    profile it returns estimates to finite, non-negative times, memory and cost (never NaN, never ranked
    at a negative time)."""
    from advisor import api
    from advisor.profiler.schema import load_profile

    path = write(text, "p.yaml")
    try:
        prof = load_profile(path)
    except UserError as exc:
        assert exc.line().startswith(str(path)) and "\n" not in exc.line()
        return
    try:
        est = api.estimate(prof, "h100-sxm", steps=1000, cat=api.catalog())
    except UserError:
        return  # e.g. a batch that fits on no device: a user error, not a number
    numbers = [est.step_time_s, est.memory.total_bytes, est.total_time_s or 0.0, est.cost_usd or 0.0]
    assert all(math.isfinite(x) and x >= 0 for x in numbers), numbers


@lru_cache(maxsize=1)
def export_doc() -> dict:
    """A real export of a small recommendation (two options, two Pareto points)."""
    from advisor import api
    from advisor.recommender.model import Constraints
    from advisor.render.export import export_data

    rec = api.recommend(api.profile_from("gpt2_124m"), steps=1000, constraints=Constraints(max_devices=8), top=2)
    data = io.plain(export_data(rec))
    data["pareto"] = data["pareto"][:2]
    return data


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=st.deferred(lambda: mutated(export_doc())))
def test_export_reader_shows_json_or_exits_2(capfd, text):
    """`advisor show FILE -f json` on any file: exit code 0 with strict JSON on stdout (no NaN, no
    Infinity), or exit code 2 with one line on stderr; never a traceback, never exit code 1."""
    result = cli(capfd, "show", write(text, "rec.yaml"), "-f", "json")
    assert "Traceback" not in result.err
    if result.code == 0:
        json.loads(result.out, parse_constant=lambda c: pytest.fail(f"non-finite {c} in JSON"))
    else:
        assert result.code == 2 and len(result.error_lines()) == 1, result.err


# ---- the output writer ----

TARGETS = ["missing", "file", "read-only", "symlink", "dangling", "folder", "fifo", "no-folder"]
FAILURES = [None, None, "fsync", "replace", "write"]


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    target=st.sampled_from(TARGETS),
    mode=st.sampled_from([0o600, 0o640, 0o644, 0o664, 0o755]),
    content=st.one_of(st.text(max_size=200), st.binary(max_size=200)),
    failure=st.sampled_from(FAILURES),
    interrupt=st.booleans(),
)
def test_writer_writes_the_real_target_or_leaves_it_intact(monkeypatch, target, mode, content, failure, interrupt):
    """write_atomic: either the real target (symlinks followed) holds exactly the new content with its old
    mode, and a symlink still points at it; or a UserError (KeyboardInterrupt when one is injected) and the
    target is exactly as before. Never a temporary file left behind."""
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        real, path = folder / "real.yaml", folder / "out.yaml"
        if target in ("file", "read-only", "symlink"):
            real.write_bytes(b"before")
            real.chmod(0o444 if target == "read-only" else mode)
        if target in ("file", "read-only"):
            path = real
        elif target in ("symlink", "dangling"):
            path.symlink_to(real)
        elif target == "folder":
            path.mkdir()
        elif target == "fifo":
            os.mkfifo(path)
        elif target == "no-folder":
            path = folder / "nope" / "out.yaml"
        before = {p.name: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) for p in folder.iterdir() if p.is_file()}

        def fail(*args, **kwargs):
            raise KeyboardInterrupt if interrupt else OSError(errno.ENOSPC, "No space left on device")

        with monkeypatch.context() as m:
            m.setattr(os, "fsync", fail if failure == "fsync" else lambda fd: None)
            if failure == "replace":
                m.setattr(os, "replace", fail)
            if failure == "write":
                m.setattr(os, "chmod", fail)
            try:
                io.write_atomic(path, content)
                ok = True
            except (UserError, KeyboardInterrupt) as exc:
                if isinstance(exc, KeyboardInterrupt):
                    assert interrupt and failure is not None
                ok = False
        names = sorted(p.name for p in folder.iterdir())
        assert not [n for n in names if n.endswith(".tmp")], names
        data = content.encode() if isinstance(content, str) else content
        if ok:
            assert target not in ("read-only", "folder", "fifo", "no-folder") and failure is None
            written = real if target in ("file", "symlink", "dangling") else path
            assert written.read_bytes() == data
            if target in ("file", "symlink"):
                assert stat.S_IMODE(written.stat().st_mode) == mode
            if target in ("symlink", "dangling"):
                assert path.is_symlink() and path.resolve() == real.resolve()
        else:
            after = {p.name: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) for p in folder.iterdir() if p.is_file()}
            assert after == before
