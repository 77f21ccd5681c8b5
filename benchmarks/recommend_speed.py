"""How fast the recommender answers (issue 5: ≥ 10,000 candidates estimated and ranked in ≤ 1 s; the command
end to end in ≤ 1.5 s without importing torch).

    python benchmarks/recommend_speed.py [PROFILE] [--catalog OVERLAY ...] [--repeat 5]

PROFILE defaults to the shipped profiles/gpt2_124m.yaml. Part 1 times `recommend()` in-process over every
catalog instance × node count × all five precisions × strategy × checkpointing × both pricings (a spot and an
on-demand candidate share one performance estimate: they differ only in price). Part 2 times
`advisor recommend PROFILE --tokens 10B --deadline 3d` as a user runs it, and checks that torch stays out.
Prints figures; asserts nothing (timings depend on the machine).
"""

from __future__ import annotations

import argparse
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
from advisor.vocab import PRECISIONS  # noqa: E402


def in_process(profile_path: str, overlays: list[Path], repeat: int) -> None:
    cat = api.catalog(overlays)
    prof = api.profile_from(profile_path)
    workload = Workload(tokens=10e9) if prof.tokens_per_sample else Workload(samples=1.28e6, epochs=90)
    constraints = Constraints(deadline_s=3 * 86400, precisions=list(PRECISIONS), pricing="both", max_devices=4096)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        rec = recommend(prof, cat, workload, constraints)
        times.append(time.perf_counter() - start)
    print(f"profile {prof.name}, {workload.describe()}, catalog {len(cat.instances)} instances")
    print(
        f"recommend(): {rec.candidates:,} candidates ({rec.estimated:,} distinct estimates, "
        f"{len(rec.feasible):,} fit and are priced, {rec.qualifying:,} meet 3 days) ranked in "
        f"median {statistics.median(times):.3f} s, best {min(times):.3f} s over {repeat} runs"
    )


def end_to_end(profile_path: str, repeat: int) -> None:
    code = (
        "import sys, time; t = time.perf_counter()\n"
        "from advisor.cli import main\n"
        f"sys.argv = ['advisor', 'recommend', {profile_path!r}, '--tokens', '10B', '--deadline', '3d']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', file=sys.stderr)\n"
    )
    times, torch_seen = [], False
    for _ in range(repeat):
        start = time.perf_counter()
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
        times.append(time.perf_counter() - start)
        torch_seen |= "TORCH" in result.stderr.replace("NO-TORCH", "")
        if result.returncode != 0:
            print(result.stderr)
            return
    print(
        f"advisor recommend {Path(profile_path).stem} --tokens 10B --deadline 3d: "
        f"median {statistics.median(times):.2f} s, "
        f"best {min(times):.2f} s end to end (interpreter start included); torch imported: {torch_seen}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", nargs="?", default=str(ROOT / "profiles" / "gpt2_124m.yaml"))
    parser.add_argument("--catalog", action="append", type=Path, default=[])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    in_process(args.profile, args.catalog, args.repeat)
    end_to_end(args.profile, max(3, args.repeat // 2))


if __name__ == "__main__":
    main()
