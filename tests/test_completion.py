"""Shell completion (`advisor --install-completion`, `--show-completion`): names from the catalog and the shipped
profiles, in bash and zsh, fast (no torch)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

from advisor import api


def complete(words: str, shell: str = "bash", env: dict | None = None, block_torch: bool = False) -> list[str]:
    """What advisor answers a shell asking to complete the last word of `words` (as typer's scripts ask)."""
    parts = words.split(" ")
    full = {**os.environ, **(env or {}), "_ADVISOR_COMPLETE": f"complete_{shell}"}
    full.pop("ADVISOR_CATALOG", None)
    if shell == "bash":
        full |= {"COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1)}
    else:
        full |= {"_TYPER_COMPLETE_ARGS": words}
    code = "import sys\nsys.modules['torch'] = None\n" if block_torch else ""
    code += "from advisor.cli import main\nmain()\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, cwd=ROOT, timeout=60)
    assert r.returncode == 0 and not r.stderr, r.stderr
    return r.stdout.splitlines()


def h1_devices() -> list[str]:
    return [d for d in api.catalog().devices if d.startswith("h1")]


def test_hardware_completes_device_ids_from_the_catalog():
    got = complete("advisor estimate gpt2_124m -H h1", block_torch=True)  # completion never imports torch
    assert {"h100-sxm", "h100-pcie", "h100-nvl"} <= set(got)
    assert got == h1_devices()  # every device id starting with h1, in catalog order, and nothing else


def test_other_names_complete():
    assert "p5.48xlarge" in complete("advisor catalog show p5")  # an instance by its provider's name
    assert complete("advisor recommend gpt2_124m --providers aws,g") == ["aws,gcp"]
    assert "gpu,h100-sxm" in complete("advisor recommend gpt2_124m --devices gpu,h1")
    assert complete("advisor compare res") == ["resnet50"]  # shipped profiles
    assert complete("advisor catalog list --kind t") == ["tpu"]
    assert complete("advisor profile --task c") == ["causal-lm"]
    assert complete("advisor profile llama3_") == ["llama3_405b", "llama3_70b", "llama3_8b"]  # shipped models
    assert complete("advisor profile tests/models/tiny_g") == ["tests/models/tiny_gpt.py"]  # model files
    assert {"hf:", "timm:", "torchvision:"} <= set(complete("advisor profile "))


def test_user_overlay_names_complete(tmp_path):
    folder = tmp_path / "advisor" / "catalog"
    folder.mkdir(parents=True)
    (folder / "mine.yaml").write_text("devices:\n  - id: h1-lab-card\n    name: Lab card\n")  # read, not validated
    assert "h1-lab-card" in complete("advisor estimate x -H h1", env={"XDG_CONFIG_HOME": str(tmp_path)})


def test_zsh_gets_names_with_descriptions():
    out = "\n".join(complete("advisor estimate gpt2_124m -H h1", shell="zsh"))
    assert out.startswith("_arguments")
    assert '"h100-sxm":"NVIDIA H100 SXM5 80GB"' in out


def show(shell: str) -> str:
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}  # name the shell instead of detecting it
    r = subprocess.run(
        [sys.executable, "-m", "advisor", "--show-completion", shell], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_bash_and_zsh_scripts_are_produced():
    bash = show("bash")
    assert "_ADVISOR_COMPLETE=complete_bash" in bash and "complete -o default -F _advisor_completion advisor" in bash
    zsh = show("zsh")
    assert zsh.startswith("#compdef advisor") and "_ADVISOR_COMPLETE=complete_zsh advisor" in zsh


def wrapper(tmp_path) -> dict:
    """An `advisor` on PATH that runs this tree, as the installed script would."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "advisor"
    exe.write_text(f'#!/bin/sh\ncd "{ROOT}" && exec "{sys.executable}" -m advisor "$@"\n')
    exe.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_real_bash_completes_with_the_script(tmp_path):
    script = tmp_path / "advisor.bash"
    script.write_text(show("bash"))
    probe = (
        f"source {script}\n"
        "COMP_WORDS=(advisor estimate gpt2_124m -H h1); COMP_CWORD=4\n"
        "_advisor_completion advisor\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    r = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, env=wrapper(tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == h1_devices()


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_real_zsh_completes_with_the_script(tmp_path):
    # zsh's completion system runs inside its line editor; here the script's function runs with `words` and
    # CURRENT set as the editor sets them, and _arguments is replaced by a function that prints what it is given
    script = tmp_path / "_advisor"
    script.write_text(show("zsh"))
    probe = (
        "compdef() { :; }\n"
        '_arguments() { print -r -- "$@"; }\n'
        f"source {script}\n"
        "words=(advisor estimate gpt2_124m -H h1); CURRENT=5\n"
        "_advisor_completion\n"
    )
    r = subprocess.run(["zsh", "-f", "-c", probe], capture_output=True, text=True, env=wrapper(tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    assert all(f'"{d}":' in r.stdout for d in h1_devices()), r.stdout
