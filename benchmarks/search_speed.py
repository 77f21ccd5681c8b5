"""How fast the layout search answers (issue 11): Llama-3-70B on every catalog instance up to 1,024 devices, and
`advisor recommend gpt2_124m --tokens 10B --deadline 3d` end to end.

    python benchmarks/search_speed.py [--repeat 5]

Part 1 runs `recommend()` in-process for the shipped llama3_70b profile over the whole catalog with
--max-devices 1024, twice: with the default precisions (fp32, tf32 where there is one, bf16-mixed) at the model
file's GLOBAL_BATCH (2048 sequences, Llama 3's 16M tokens), and with bf16-mixed at a global batch of 512. It reports the
layouts evaluated (each a tp·pp·vpp·cp·dp × sharding × recomputation × node count, at its best micro-batches),
how many fit in memory, and the time (process CPU time, median and best of the repeats: the machine is shared).
Part 2 times the gpt2 command as a user runs it (interpreter start included, wall and CPU time of the child) and
checks that torch stays out. As for an installed package, Python may keep its compiled bytecode: the child runs
without PYTHONDONTWRITEBYTECODE (set on some CI machines; it recompiles all of advisor, about 0.1-0.2 s, on every
run) after one untimed warm-up run. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from advisor import api  # noqa: E402
from advisor.estimator.config import Workload  # noqa: E402
from advisor.recommender.model import Constraints  # noqa: E402
from advisor.recommender.rank import recommend  # noqa: E402


def in_process(repeat: int) -> None:
    cat = api.catalog()
    prof = api.profile_from("llama3_70b")
    workload = Workload(tokens=15e12)
    cases = {
        "default precisions, the recipe's global batch (2048)": Constraints(deadline_s=60 * 86400, max_devices=1024),
        "bf16-mixed, global batch 512": Constraints(
            deadline_s=60 * 86400, max_devices=1024, precisions=["bf16-mixed"], global_batch=512
        ),
    }
    print(f"llama3_70b, 15T tokens, deadline 60 d, catalog of {len(cat.instances)} instances, up to 1,024 devices")
    for name, constraints in cases.items():
        cpu, wall = [], []
        for _ in range(repeat):
            c0, w0 = time.process_time(), time.perf_counter()
            rec = recommend(prof, cat, workload, constraints)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
        fit = rec.estimated - rec.rejections.counts.get("memory", 0)
        print(
            f"  {name}: {rec.estimated:,} layouts evaluated, about {fit:,} fit in memory, {rec.qualifying:,} meet "
            f"60 d; CPU time median {statistics.median(cpu):.2f} s (best {min(cpu):.2f} s), wall median "
            f"{statistics.median(wall):.2f} s over {repeat} runs"
        )


def end_to_end(repeat: int) -> None:
    code = (
        "import sys\n"
        "from advisor.cli import main\n"
        "sys.argv = ['advisor', 'recommend', 'gpt2_124m', '--tokens', '10B', '--deadline', '3d']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', file=sys.stderr)\n"
    )
    wall, cpu, torch_seen = [], [], False
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, env=env)  # writes the bytecode
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        torch_seen |= "NO-TORCH" not in res.stderr
    print(
        f"advisor recommend gpt2_124m --tokens 10B --deadline 3d: wall median {statistics.median(wall):.2f} s "
        f"(best {min(wall):.2f} s), CPU median {statistics.median(cpu):.2f} s (best {min(cpu):.2f} s) over "
        f"{repeat} runs; torch {'imported' if torch_seen else 'not imported'}"
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    in_process(args.repeat)
    end_to_end(args.repeat)


if __name__ == "__main__":
    main(sys.argv[1:])
