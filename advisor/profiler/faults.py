"""What a training step faults in from the OS on a CPU, counted in fresh processes.

PyTorch's CPU allocator calls malloc and free for every tensor, and glibc hands memory back to the OS (a block
mapped on its own and unmapped when freed, the heap's top trimmed), so the next step faults it in again at the OS's
first-touch rate. How much depends on every allocation since the process started: tensors, but also the Python
objects, autograd nodes and oneDNN primitives between them, which keep the heap's top in use and scatter its free
space. A replay of the tensors alone (`heap`) misses those and over-counts: on the development VM (2026-12-06) a
2-layer LSTM at batch 32 replayed 94 MB a step, where fresh processes faulted 0-8 MB once past their third step,
their heaps twice the replay's size with 110-130 MB free inside; a GPT-style decoder at 16 replayed 180 MB, measured
13-71 MB.

So `measure` counts them: for each batch size, a fresh Python process (`python -m advisor.profiler.faults`) loads
the model file as `advisor validate` does, builds it, runs WARMUP steps and then STEPS more, and reports the minor
page faults of each phase of each of those steps. The estimate takes their mean: a steady-state step varies a lot
from one to the next (the LSTM's: 0, 22, 0, 0, 1 MB; a ResNet stem's: 0-29 MB), and a long training run pays the
mean. The processes for the different batch sizes run side by side, on one torch thread each (they count pages, not
time, and a step's tensors are allocated by its main thread whatever the thread count: the benchmark's fresh
processes fault as much at two threads as at one, within their spread). A model that cannot
be rebuilt from a file in another process (one a library built in this one: hf:, timm:, torchvision:) gets None,
and the profiler replays it instead.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

from advisor.vocab import PHASES

WARMUP, STEPS = 3, 8  # validate's and the benchmark's warm-up; 8 steps for the mean


def step_faults(path: Path, batch_size: int, precision: str, optimizer: str | None) -> dict[str, list[int]]:
    """Bytes of minor page faults in each phase of STEPS steps after WARMUP, in this process (which should be
    fresh: `measure` runs it in one)."""
    import mmap

    from advisor.profiler.device import low_dtype, matmul_precision
    from advisor.profiler.model_file import load_model_file
    from advisor.profiler.profile import minor_faults
    from advisor.profiler.step import PhaseClock, build, train_step

    mf = load_model_file(path)
    low = low_dtype(precision)
    model, batch, opt, _ = build(mf, "cpu", batch_size, precision, optimizer)
    counter = PhaseClock(lambda: float(minor_faults() or 0), "cpu")
    out: dict[str, list[int]] = {p: [] for p in PHASES}
    with matmul_precision(precision, "cpu"):
        for i in range(WARMUP + STEPS):
            train_step(mf, model, batch, opt, "cpu", low, counter)
            if i >= WARMUP:
                for p, n in zip(PHASES, counter.phases(), strict=True):
                    out[p].append(int(n) * mmap.PAGESIZE)
    return out


def rebuildable(mf) -> bool:
    """Whether another process can build the model from its file: a model file, or a shipped one (whose file is
    one), but not a model a library built in this process (hf:, timm:, torchvision:)."""
    source = getattr(mf, "source", None)
    return (source is None or source.kind in ("file", "shipped")) and Path(mf.path).is_file()


def measure(
    mf, batch_sizes: list[int], precision: str, optimizer: str | None
) -> list[tuple[float, dict[str, float]]] | None:
    """For each batch size, (mean bytes a steady-state step of a fresh process faults in, each phase's share of
    them), from `step_faults` in fresh processes side by side. None where the model cannot be rebuilt
    in another process or a process fails (the caller replays instead, and reports the user's errors in-process)."""
    if not rebuildable(mf):
        return None
    procs = []
    try:
        for b in batch_sizes:
            args = [str(mf.path), str(b), precision, optimizer or ""]
            cmd = [sys.executable, "-m", "advisor.profiler.faults", *args]
            quiet = {"stdin": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, **quiet))
        outs = []
        for proc in procs:
            # no timeout of its own: a --timeout stops this process, and the finally clause kills the children
            stdout, _ = proc.communicate()
            if proc.returncode != 0:
                return None
            outs.append(json.loads(stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):  # no JSON line: user code that wrote after it, or nothing
        return None
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return [summarize(out) for out in outs]


def summarize(per_step: dict[str, list[int]]) -> tuple[float, dict[str, float]]:
    """(mean bytes a step faults in, each phase's share) from `step_faults`' per-phase lists."""
    means = {p: statistics.fmean(v) for p, v in per_step.items() if v}
    total = sum(means.values())
    return total, ({p: v / total for p, v in means.items() if v > 0} if total > 0 else {})


def main(argv: list[str]) -> None:
    path, batch, precision, optimizer = argv
    import torch

    torch.set_num_threads(1)
    print(json.dumps(step_faults(Path(path), int(batch), precision, optimizer or None)))


if __name__ == "__main__":
    main(sys.argv[1:])
