"""Issue 13: hostile and broken input. One test per case the fuzz run found, named after it: each gets exit
code 2 (130 for Ctrl-C) and one clear line, no file of the user's is replaced by an output they did not
name, nothing hangs, nothing nonsensical is ranked."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, assert_user_error, run_cli
from inproc import cli, user_error

from advisor import io
from advisor.errors import UserError

GPT2 = ROOT / "profiles" / "gpt2_124m.yaml"
WORK = ("--steps", "1000", "--devices", "h100", "--max-devices", "8")


def profile_text(**replace: str) -> str:
    """The shipped gpt2_124m profile with top-level fields replaced ('batch_size': '0')."""
    lines = GPT2.read_text().splitlines()
    for key, value in replace.items():
        lines = [f"{key}: {value}" if line.startswith(f"{key}:") else line for line in lines]
    return "\n".join(lines) + "\n"


def op_field(index: int, field: str, value) -> str:
    """The shipped profile with one field of one op record set to `value`."""
    data = io.read_yaml(GPT2)
    data["ops"][index][field] = value
    return io.dump_yaml(data)


def negative_flops() -> str:
    """The shipped profile with its second op's FLOPs per sample at -10^12 (it would rank at a negative time)."""
    data = io.read_yaml(GPT2)
    data["ops"][1]["flops"]["per_sample"] = -1e12
    return io.dump_yaml(data)


@pytest.fixture
def prof(tmp_path) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(GPT2.read_text())
    return path


@pytest.fixture
def export(tmp_path, capfd) -> Path:
    path = tmp_path / "rec.yaml"
    assert cli(capfd, "recommend", "gpt2_124m", *WORK, "--export", path).code == 0
    return path


# ---- writes destroy what they replace ----


def test_export_to_dev_null_keeps_the_device(tmp_path, capfd):
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of our own
    except (PermissionError, AttributeError, OSError):
        node = Path("/dev/null")
        if os.geteuid() == 0:  # never risk the real one as root: this case needs mknod
            pytest.skip("cannot make a device node here")
    assert cli(capfd, "recommend", "gpt2_124m", *WORK, "--export", node).code == 0
    assert stat.S_ISCHR(node.stat().st_mode)
    assert not list(tmp_path.glob(".*tmp"))


def test_export_to_fifo_is_written_through_and_refused_without_reader(tmp_path, capfd):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    user_error(cli(capfd, "recommend", "gpt2_124m", *WORK, "--export", fifo), "pipe that no program reads")
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    time.sleep(0.2)
    assert cli(capfd, "recommend", "gpt2_124m", *WORK, "--export", fifo).code == 0
    reader.join(10)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and got[0].startswith("kind: advisor-recommendation")


def test_export_through_symlink_keeps_the_link(tmp_path, capfd):
    real = tmp_path / "real.yaml"
    real.write_text("old\n")
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    assert cli(capfd, "recommend", "gpt2_124m", *WORK, "--export", link).code == 0
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert real.read_text().startswith("kind: advisor-recommendation")


def test_read_only_target_is_refused_and_kept(tmp_path, capfd):
    target = tmp_path / "keep.yaml"
    target.write_text("mine\n")
    target.chmod(0o444)
    user_error(cli(capfd, "recommend", "gpt2_124m", *WORK, "--export", target), "read-only")
    assert target.read_text() == "mine\n" and stat.S_IMODE(target.stat().st_mode) == 0o444


def test_replaced_target_keeps_its_mode(tmp_path, capfd):
    target = tmp_path / "shared.yaml"
    target.write_text("old\n")
    target.chmod(0o640)
    assert cli(capfd, "recommend", "gpt2_124m", *WORK, "--export", target).code == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_profile_output_onto_model_source_is_refused(tmp_path, capfd):
    model = tmp_path / "model.py"
    source = (ROOT / "tests" / "models" / "tiny_mlp.py").read_text()
    model.write_text(source)
    user_error(cli(capfd, "profile", model, "-o", model, "--device", "meta"), "--output", "the model file")
    assert model.read_text() == source


def test_default_profile_output_never_replaces_a_file_advisor_did_not_write(tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "profiles").mkdir()
    mine = tmp_path / "profiles" / "tiny_mlp.yaml"
    mine.write_text("my: notes\n")
    user_error(cli(capfd, "profile", ROOT / "tests" / "models" / "tiny_mlp.py", "--device", "meta"), "not an advisor")
    assert mine.read_text() == "my: notes\n"


def test_recommend_export_onto_its_profile_is_refused(prof, capfd):
    before = prof.read_text()
    user_error(cli(capfd, "recommend", prof, *WORK, "--export", prof), "--export", "the profile")
    assert prof.read_text() == before


def test_export_onto_a_catalog_overlay_is_refused(tmp_path, capfd):
    overlay = tmp_path / "prices.yaml"
    overlay.write_text("instances:\n  - id: aws-p5.48xlarge\n    pricing: {on_demand_usd_per_hour: 60.0}\n")
    user_error(
        cli(capfd, "recommend", "gpt2_124m", *WORK, "--catalog", overlay, "--export", overlay), "catalog overlay"
    )
    assert "60.0" in overlay.read_text()


def test_export_and_skypilot_on_one_path_are_refused(tmp_path, capfd):
    both = tmp_path / "x.yaml"
    user_error(cli(capfd, "recommend", "gpt2_124m", *WORK, "--export", both, "--skypilot", both), "--skypilot")
    assert not both.exists()


def test_import_skypilot_output_onto_its_input_is_refused(tmp_path, capfd):
    csv = tmp_path / "aws" / "vms.csv"
    csv.parent.mkdir()
    text = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region\n"
    text += "p5.48xlarge,H100,8,192,2048,98.3,us-east-1\n"
    csv.write_text(text)
    user_error(cli(capfd, "catalog", "import-skypilot", tmp_path, "-o", csv), "--output", "SkyPilot catalog")
    assert csv.read_text() == text


def test_no_temporary_file_is_left_after_an_interrupt(tmp_path, monkeypatch):
    target = tmp_path / "out.yaml"
    target.write_text("before\n")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        io.write_atomic(target, "after\n")
    assert target.read_text() == "before\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml"]


def test_csv_rows_are_written_whole_with_their_header(tmp_path):
    # two rows of the first row's keys; a comma inside a field is quoted, as csv does
    target = io.write_csv(tmp_path / "rows.csv", [{"run": "a", "ms": 1.5}, {"run": "b,c", "ms": 2}], "rows")
    assert target.read_text().splitlines() == ["run,ms", "a,1.5", '"b,c",2']
    # no rows yet (a benchmark with nothing collected): the header of the fields given, alone
    target = io.write_csv(tmp_path / "empty.csv", [], "rows", ["run", "ms"])
    assert target.read_text().splitlines() == ["run,ms"]


# ---- unbounded reads ----


def test_catalog_dev_zero_is_refused(capfd):
    user_error(cli(capfd, "catalog", "list", "--catalog", "/dev/zero"), "/dev/zero", "character device")


def test_catalog_fifo_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "overlay.yaml"
    os.mkfifo(fifo)
    assert_user_error(run_cli("catalog", "list", "--catalog", str(fifo)), "overlay.yaml", "fifo")


def test_show_fifo_is_refused_without_hanging(tmp_path, capfd):
    fifo = tmp_path / "rec.yaml"
    os.mkfifo(fifo)
    user_error(cli(capfd, "show", fifo), "fifo")


def test_show_alias_bomb_is_refused(export, capfd):
    # 9 levels of 9 aliases each: 9**9 = 387 million values from 1 KB, under the free-form `workload`
    bomb = "".join(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))
    text = export.read_text().replace("question:\n", "question:\n  bomb_base: &l0 [x, x, x, x, x, x, x, x, x]\n" + bomb)
    export.write_text(text)
    assert len(bomb) < 1500
    start = time.process_time()
    user_error(cli(capfd, "show", export, "-f", "json"), "rec.yaml:", "aliases count what they repeat")
    assert time.process_time() - start < 5


def test_profile_of_aliased_ops_is_refused(tmp_path, capfd):
    # the shape of the 50 MB file, at 1/50 of its size: one op, then a million aliases of it
    text = profile_text().split("ops:\n")[0] + "ops:\n- &op {op: aten.mm, phase: forward, category: matrix, "
    text += "dtype: fp32, module: x, count: 1, flops: {fixed: 1, per_sample: 1}, bytes_read: {fixed: 1, per_sample: 1}"
    text += ", bytes_written: {fixed: 1, per_sample: 1}}\n" + "- *op\n" * 1_000_000
    path = tmp_path / "aliased.yaml"
    path.write_text(text)
    user_error(cli(capfd, "estimate", path, "-H", "h100-sxm", "--steps", "10"), "aliased.yaml:", "more than")


def test_oversized_input_is_refused_naming_the_override(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("ADVISOR_MAX_FILE_SIZE", "1kB")
    line = user_error(cli(capfd, "estimate", GPT2, "-H", "h100-sxm", "--steps", "10"), "over the 1 kB limit")
    assert "ADVISOR_MAX_FILE_SIZE" in line
    monkeypatch.setenv("ADVISOR_MAX_FILE_SIZE", "1MB")
    assert cli(capfd, "estimate", GPT2, "-H", "h100-sxm", "--steps", "10").code == 0


# ---- nonsense is ranked ----


@pytest.mark.parametrize(
    ("case", "fragment"),
    [
        ("negative_flops", "ops.1.flops is negative"),
        ("negative_batch", "batch_size"),
        ("nan", "finite"),
        ("batch_size_zero", "batch_size"),
        ("unknown_precision", "precision"),
        ("unknown_dtype", "unknown dtype"),
        ("unknown_layout", "ops.1.layout"),
    ],
)
def test_nonsense_profile_is_refused(tmp_path, capfd, case, fragment):
    text = {
        "negative_flops": negative_flops(),
        "negative_batch": profile_text(batch_size="-12"),
        "nan": profile_text().replace("parameter_bytes: 497759232.0", "parameter_bytes: .nan"),
        "batch_size_zero": profile_text(batch_size="0"),
        "unknown_precision": profile_text(precision="fp7"),
        "unknown_dtype": profile_text().replace("dtype: int64", "dtype: int65", 1),
        "unknown_layout": op_field(1, "layout", "cpu-cast"),  # a typo of cpu_cast is not taken as no layout
    }[case]
    path = tmp_path / f"{case}.yaml"
    path.write_text(text)
    for command in (("estimate", path, "-H", "h100-sxm", "--steps", "10"), ("recommend", path, *WORK)):
        user_error(cli(capfd, *command, "-f", "json"), f"{case}.yaml", "invalid profile", fragment)


def test_nonfinite_result_is_an_internal_error_never_printed(capfd):
    from advisor.render.output import Format, NonFiniteResult, emit

    with pytest.raises(NonFiniteResult) as info:
        emit({"step_time_s": float("nan")}, Format.json, lambda: None)
    assert "step_time_s" in str(info.value)
    assert capfd.readouterr().out == ""


# ---- own output crashes the tool ----

INT_MM = """
import torch
from torch import nn


class IntMM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)
        self.register_buffer("codes", torch.arange(64, dtype=torch.int64).reshape(8, 8))

    def forward(self, x):
        keys = torch.mm(x.long(), self.codes)  # an integer matmul
        return self.lin(x + keys.float() * 0)


def build_model():
    return IntMM()


def example_batch(batch_size):
    return torch.randn(batch_size, 8)
"""


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_integer_mm_model_profiles_and_estimates(tmp_path, capfd, device):
    model, out = tmp_path / "intmm.py", tmp_path / "intmm.yaml"
    model.write_text(INT_MM)
    assert cli(capfd, "profile", model, "--device", device, "-o", out, "-f", "json").code == 0
    from advisor.profiler.schema import load_profile

    mm = [o for o in load_profile(out).ops if o.op == "aten.mm" and o.dtype == "int64"]
    assert len(mm) == 1 and mm[0].flops.per_sample == 128.0  # 2*m*n*k per sample = 2*1*8*8 = 128
    result = cli(capfd, "estimate", out, "-H", "h100-sxm", "--steps", "1000", "-f", "json")
    assert result.code == 0, result.err
    assert 0 < json.loads(result.out)["step_time_s"] < 1


def test_import_skypilot_skips_rows_the_catalog_would_reject(tmp_path, capfd):
    rows = [
        "p5.48xlarge,H100,8,192,2048,98.32,us-east-1,,",  # good
        "p5.48xlarge,H100,8,192,2048,inf,us-west-2,,",  # infinite price
        "p5.huge,H100,8,192,2048,50000,us-east-1,,",  # $50k/h: over the schema's $10,000/h
        "g.half,H100,0.5,8,64,2.0,us-east-1,,",  # half a GPU
        "g.neg,H100,-8,8,64,2.0,us-east-1,,",  # negative count
        "g.inf,H100,8,inf,nan,3.0,us-east-1,,",  # unreadable vCPUs and memory: dropped, not fatal
    ]
    csv = tmp_path / "aws" / "vms.csv"
    csv.parent.mkdir()
    csv.write_text("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n")
    csv.write_text(csv.read_text() + "\n".join(rows) + "\n")
    out = tmp_path / "overlay.yaml"
    result = cli(capfd, "catalog", "import-skypilot", tmp_path, "-o", out, "-f", "json")
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert summary["instances"] == 2 and summary["skipped_rows"] == 4
    reasons = summary["skipped_by_reason"]
    assert reasons["accelerator count not a positive whole number"] == 2
    assert sum(n for r, n in reasons.items() if r.startswith("no on-demand price")) == 1
    assert sum(n for r, n in reasons.items() if "on_demand_usd_per_hour" in r) == 1
    assert cli(capfd, "catalog", "validate", out).code == 0


def test_broken_overlay_in_env_is_named(tmp_path, capfd, monkeypatch, export):
    bad = tmp_path / "bad.yaml"
    bad.write_text("instances:\n  - id: x\n    pricing: {on_demand_usd_per_hour: .inf}\n")
    monkeypatch.setenv("ADVISOR_CATALOG", str(bad))
    user_error(cli(capfd, "catalog", "list"), "bad.yaml", "$ADVISOR_CATALOG")
    assert cli(capfd, "show", export).code == 0  # a command that needs no catalog still works


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("as_of: 2026-13-45", ["overlay.yaml:5", "field instances[0].as_of", "2026-13-45", "as a date"]),
        ("vcpus: " + "9" * 5000, ["overlay.yaml:5", "field instances[0].vcpus", "as an integer"]),
    ],
    ids=["impossible_date", "integer_of_5000_digits"],
)
def test_unreadable_scalar_exits_2_naming_file_and_field(tmp_path, capfd, text, fragments):
    path = tmp_path / "overlay.yaml"
    path.write_text(f"instances:\n  - id: aws-p5.48xlarge\n    pricing: {{on_demand_usd_per_hour: 60}}\n\n    {text}\n")
    user_error(cli(capfd, "catalog", "list", "--catalog", path), *fragments)


# ---- silent surprises ----


def test_duplicate_yaml_keys_are_refused_with_line(tmp_path, capfd):
    path = tmp_path / "prices.yaml"
    path.write_text(
        "instances:\n  - id: aws-p5.48xlarge\n    pricing:\n      on_demand_usd_per_hour: 60\n"
        "      on_demand_usd_per_hour: 6\n"
    )
    user_error(
        cli(capfd, "catalog", "list", "--catalog", path), "prices.yaml:5", "duplicate key 'on_demand_usd_per_hour'"
    )


def test_same_overlay_twice_is_one_overlay(tmp_path, capfd, monkeypatch):
    path = tmp_path / "mine.yaml"
    path.write_text("instances:\n  - id: my-box\n    provider: mine\n    name: box\n    device: h100-sxm\n"
                    "    device_count: 8\n    pricing: {on_demand_usd_per_hour: 20, regions: [home]}\n"
                    "    source: my own invoice\n    as_of: 2026-11-30\n")  # fmt: skip
    monkeypatch.setenv("ADVISOR_CATALOG", str(path))
    result = cli(capfd, "catalog", "show", "my-box", "--catalog", path, "--catalog", tmp_path, "-f", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["pricing"]["on_demand_usd_per_hour"] == 20


def test_tilde_in_advisor_catalog_is_expanded(tmp_path, capfd, monkeypatch):
    (tmp_path / "mine.yaml").write_text(
        "instances:\n  - id: aws-p5.48xlarge\n    pricing: {on_demand_usd_per_hour: 61}\n"
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ADVISOR_CATALOG", "~/mine.yaml")
    result = cli(capfd, "catalog", "show", "p5.48xlarge", "-f", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["pricing"]["on_demand_usd_per_hour"] == 61


def test_unreadable_overlay_folder_is_an_error(tmp_path, capfd, monkeypatch):
    folder = tmp_path / "overlays"
    (folder / "locked").mkdir(parents=True)
    real_walk = os.walk

    def walk(top, onerror=None, **kw):  # as root nothing is unreadable: report what a user would see
        if onerror is not None:
            onerror(PermissionError(13, "Permission denied", str(folder / "locked")))
        yield from real_walk(top, onerror=onerror, **kw)

    monkeypatch.setattr(os, "walk", walk)
    user_error(cli(capfd, "catalog", "list", "--catalog", folder), "locked", "cannot list catalog folder")


@pytest.mark.parametrize(("deadline", "fragment"), [("1h-30m", "cannot read '1h-30m'"), ("3", "'3' has no unit")])
def test_malformed_duration_is_an_error(capfd, deadline, fragment):
    user_error(cli(capfd, "recommend", "gpt2_124m", "--steps", "100", "--deadline", deadline), "--deadline", fragment)


def test_epochs_nan_exits_2(capfd):
    user_error(cli(capfd, "estimate", "gpt2_124m", "-H", "h100-sxm", "--samples", "1M", "--epochs", "nan"), "--epochs")


# ---- model files ----


def write_model(tmp_path, body: str, name: str = "model.py") -> Path:
    path = tmp_path / name
    path.write_text("import torch\nfrom torch import nn\n\n" + body)
    return path


BATCH = "\ndef example_batch(batch_size):\n    return torch.randn(batch_size, 4)\n"


def test_sys_exit_in_model_file_is_a_user_error(tmp_path, capfd):
    model = write_model(tmp_path, "import sys\n\nsys.exit(0)\n")
    user_error(
        cli(capfd, "profile", model, "--device", "meta", "-o", tmp_path / "p.yaml"), "model.py, line 6", "sys.exit(0)"
    )
    assert not (tmp_path / "p.yaml").exists()


def test_inputs_and_labels_passed_to_forward_name_the_fix(tmp_path, capfd):
    """example_batch returns (x, y) with no training_step: both go to forward() as positional arguments, which
    nn.Sequential cannot take; the error counts the 2 tensors and names training_step, nothing is written."""
    body = (
        "def build_model():\n    return nn.Sequential(nn.Linear(4, 2))\n\n"
        "def example_batch(batch_size):\n    return torch.randn(batch_size, 4), torch.randint(0, 2, (batch_size,))\n"
    )
    model = write_model(tmp_path, body)
    user_error(
        cli(capfd, "profile", model, "--device", "meta", "-o", tmp_path / "p.yaml"),
        "does not take the 2 tensors example_batch() in model.py returned",
        "define training_step(model, batch)",
    )
    assert not (tmp_path / "p.yaml").exists()


def test_model_without_parameters_exits_2(tmp_path, capfd):
    model = write_model(tmp_path, "def build_model():\n    return nn.ReLU()\n" + BATCH)
    user_error(cli(capfd, "profile", model, "--device", "meta", "-o", tmp_path / "p.yaml"), "no trainable parameters")


def test_make_optimizer_of_wrong_type_exits_2(tmp_path, capfd):
    body = (
        "def build_model():\n    return nn.Linear(4, 2)\n"
        + BATCH
        + "\ndef make_optimizer(params):\n    return 'adam'\n"
    )
    model = write_model(tmp_path, body)
    user_error(cli(capfd, "profile", model, "--device", "meta", "-o", tmp_path / "p.yaml"), "make_optimizer()", "str")


def test_print_in_model_keeps_json_parseable(tmp_path, capfd):
    body = "print('loading')\n\ndef build_model():\n    print('building')\n    return nn.Linear(4, 2)\n" + BATCH
    model = write_model(tmp_path, body)
    result = cli(capfd, "profile", model, "--device", "meta", "-o", tmp_path / "p.yaml", "-f", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["parameters"] == 10  # 4*2 weights + 2 biases
    assert "loading" in result.err and "building" in result.err


SLEEPY = "import time\n\ndef build_model():\n    time.sleep(1000)\n" + BATCH


def test_timeout_stops_a_model_that_never_returns(tmp_path, capfd):
    model = write_model(tmp_path, SLEEPY)
    start = time.monotonic()
    result = cli(capfd, "profile", model, "--device", "meta", "-o", tmp_path / "p.yaml", "--timeout", "1")
    user_error(result, "model.py still running after --timeout 1 s")
    assert time.monotonic() - start < 30 and not (tmp_path / "p.yaml").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize(
    ("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_ctrl_c_prints_one_line_and_exits_130(tmp_path, sig, code, word):
    body = "import sys, time\n\ndef build_model():\n    print('ready', flush=True)\n    time.sleep(1000)\n" + BATCH
    model = write_model(tmp_path, body)
    env = {**os.environ, "ADVISOR_CATALOG": ""}
    env.pop("ADVISOR_DEBUG", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "advisor", "profile", str(model), "--device", "meta", "-o", str(tmp_path / "p.yaml")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr.readline().strip() == "ready"  # the model's print, sent to stderr; it now sleeps
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert err.strip().splitlines() == [f"error: {word}; nothing written"]
    assert out == "" and not (tmp_path / "p.yaml").exists()


def test_user_error_type_is_the_one_error():
    # every refusal above is a UserError: the library raises it, only the CLI turns it into exit code 2
    with pytest.raises(UserError):
        io.read_bytes(Path("/dev/zero"))


def test_every_dtype_the_profiler_records_is_known_to_the_profile_reader():
    # the profile reader refuses unknown dtypes, so each torch dtype's recorded name must be in the vocabulary
    import torch

    from advisor.profiler.counter import dtype_name
    from advisor.vocab import RECORDED_DTYPES

    dtypes = {getattr(torch, n) for n in dir(torch) if isinstance(getattr(torch, n), torch.dtype)}
    missing = sorted({dtype_name(d) for d in dtypes} - set(RECORDED_DTYPES))
    assert not missing, f"add to advisor.vocab.RECORDED_DTYPES: {missing}"
