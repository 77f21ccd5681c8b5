"""`advisor profile MODEL` for every kind of MODEL but the libraries' (tests/test_sources_hf.py, _vision.py): a
shipped model by name, a model file, and the errors of a MODEL that is none of them; the source in the profile and
in what an estimate says it was made from."""

from __future__ import annotations

import hashlib
import json

from conftest import ROOT, assert_user_error, run_cli

from advisor import api
from advisor.profiler.schema import load_profile


def test_a_shipped_name_profiles_the_shipped_model_file(tmp_path):
    out = tmp_path / "lstm.yaml"
    r = run_cli("profile", "lstm", "--device", "meta", "-o", str(out), "-f", "json")
    assert r.returncode == 0, r.stderr
    p = load_profile(out)
    shipped = api.profile_from("lstm")  # made by profiles/regenerate.py from the same file
    source = (ROOT / "profiles" / "models" / "lstm.py").read_bytes()
    assert p.batch_size == shipped.batch_size == 20  # the file's BATCH_SIZE, as no --batch-size was given
    assert p.flops(20) == shipped.flops(20) and p.parameters == shipped.parameters == 19_780_400
    assert (p.source.kind, p.source.id, p.model_file) == ("shipped", "lstm", "profiles/models/lstm.py")
    assert p.source.config_sha256 == p.model_sha256 == hashlib.sha256(source).hexdigest()
    data = json.loads(r.stdout)
    assert data["batch_size"] == 20 and data["source"]["kind"] == "shipped"
    assert data["made_from"] == f"shipped model lstm (file sha256 {p.model_sha256[:12]})"


def test_a_model_file_records_its_source(tmp_path):
    out = tmp_path / "m.yaml"
    r = run_cli("profile", "tests/models/tiny_mlp.py", "--device", "meta", "-b", "4", "-o", str(out))
    assert r.returncode == 0, r.stderr
    p = load_profile(out)
    assert (p.source.kind, p.source.id, p.batch_size, p.name) == ("file", "tiny_mlp.py", 4, "tiny_mlp")
    assert p.made_from() == f"tiny_mlp.py (file sha256 {p.model_sha256[:12]})"


def test_models_that_are_nothing_known():
    assert_user_error(run_cli("profile", "resnet5"), "no shipped model of that name", "did you mean: resnet50")
    assert_user_error(run_cli("profile", "missing/model.py"), "model file missing/model.py does not exist")
    assert_user_error(run_cli("profile", "hugface:gpt2"), "unknown model source 'hugface:'", "hf:")
    r = run_cli("profile", "tests/models/tiny_mlp.py", "--task", "causal-lm", "--seq-len", "8")
    assert_user_error(r, "--task and --seq-len apply to hf: models only")
    assert_user_error(run_cli("profile", "timm:"), "timm: needs a model name")


def test_an_estimate_says_what_its_profile_was_made_from():
    # the shipped profiles (regenerated with the layout structure) record their model file as their source
    prof = api.profile_from("gpt2_124m")
    assert (prof.source.kind, prof.source.id) == ("file", "gpt2_124m.py")
    r = run_cli("estimate", "gpt2_124m", "-H", "h100-sxm", "--steps", "10", "-f", "json")
    assert r.returncode == 0, r.stderr
    assert f"profile gpt2_124m made from {prof.made_from()}" in json.loads(r.stdout)["assumptions"]
    # a profile written before the source field still loads and names its model file
    old = prof.model_copy(update={"source": None})
    assert old.made_from() == f"profiles/models/gpt2_124m.py (file sha256 {prof.model_sha256[:12]})"
