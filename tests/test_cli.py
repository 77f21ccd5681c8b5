"""The CLI as a new user meets it: version, help without torch, formats, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml
from conftest import ROOT, assert_user_error, run_cli

from advisor import __version__


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"advisor {__version__}"


def test_help_and_catalog_commands_do_not_import_torch():
    code = (
        "import sys\n"
        "from advisor.cli import app\n"
        "for args in (['--help'], ['catalog', 'list', '--kind', 'gpu'], ['catalog', 'show', 'h100-sxm']):\n"
        "    try:\n"
        "        app(args, standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False"


def test_list_gpu_table_is_sourced_and_dated():
    result = run_cli("catalog", "list", "--kind", "gpu")
    assert result.returncode == 0, result.stderr
    assert "h100-sxm" in result.stdout and "nvidia.com" in result.stdout and "2026-" in result.stdout
    assert "xeon" not in result.stdout  # kind filter


def test_formats_carry_the_same_data():
    as_json = json.loads(run_cli("catalog", "list", "devices", "--kind", "tpu", "--format", "json").stdout)
    as_yaml = yaml.safe_load(run_cli("catalog", "list", "devices", "--kind", "tpu", "-f", "yaml").stdout)
    assert as_json == as_yaml
    assert {d["id"] for d in as_json["devices"]} >= {"tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"}
    assert all(d["kind"] == "tpu" for d in as_json["devices"])


def test_provider_filter():
    data = json.loads(run_cli("catalog", "list", "--provider", "gcp", "-f", "json").stdout)
    assert "devices" not in data
    assert data["instances"] and all(i["provider"] == "gcp" for i in data["instances"])


def test_show_device_and_instance():
    result = run_cli("catalog", "show", "h100-sxm")
    assert result.returncode == 0
    assert "NVIDIA H100" in result.stdout and "aws-p5.48xlarge" in result.stdout
    data = json.loads(run_cli("catalog", "show", "p5.48xlarge", "-f", "json").stdout)
    assert data["device"] == "h100-sxm" and data["device_count"] == 8


def test_user_errors():
    assert_user_error(run_cli("catalog", "show", "h1000"), "unknown device or instance 'h1000'", "did you mean")
    assert_user_error(run_cli("catalog", "list", "--kind", "fpga"), "--kind", "cpu, gpu, tpu, accelerator")
    assert_user_error(run_cli("catalog", "list", "--provider", "awz"), "unknown --provider 'awz'", "aws")
    bad = run_cli("catalog", "list", "--format", "xml")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_oversubscribed_threads_get_a_note(monkeypatch, capsys):
    # a process allowed on cores {0, 1}: 2 usable cores; 64 threads are more, 2 and 1 are not, None (the default)
    # is never a note
    from advisor.cli import common

    monkeypatch.setattr(common.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert common.usable_cores() == 2
    common.note_oversubscribed(64, "each timed step")
    err = capsys.readouterr().err
    assert err.startswith("note: 64 threads on 2 CPU cores:") and "give --threads 2 or fewer" in err
    for threads in (2, 1, None):
        common.note_oversubscribed(threads, "each timed step")
        assert capsys.readouterr().err == ""
