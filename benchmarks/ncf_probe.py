"""Where an NCF training step's time goes on a local NVIDIA GPU, as DeepLearningExamples' ncf.py runs it, and what
one embedding gradient costs alone: the measurements behind the NCF rows of the published-GPU report.

    python benchmarks/ncf_probe.py run [--out DIR]        (needs a GPU; about 2 minutes on an H200)
    python benchmarks/ncf_probe.py run --only gathers    (needs a GPU: the lookup sweep alone, DIR/gathers.json)
    python benchmarks/ncf_probe.py report [--dir DIR] [--no-write]   (anywhere: the same steps estimated, side by
                                                                       side, into DIR/report.txt)

`run` trains benchmarks/gpu_models/ncf.py's NeuMF three ways at three batch sizes (65,536, DLE's 2^20 and Lambda's
10,000,000), each the median of 10 steps after 3 warm-ups, phases timed apart with CUDA events:
  fp32      the model, its gradients and Adam in fp32 (TF32 off);
  o2        apex AMP O2 as the published fp16 rows ran it: the model in fp16, an fp32 master copy of every weight,
            the fp16 gradients unscaled into fp32 master gradients with an inf/NaN check, fused Adam on the
            masters, the masters copied back into the fp16 model (apex's multi-tensor kernels, here torch's
            _foreach equivalents);
  autocast  DLE's ncf.py since 2023: fp32 weights, torch.autocast(fp16), a GradScaler.
Then torch.profiler's per-op and per-kernel CUDA times of 2 steps of each (DIR/ncf-kernels.txt), and
aten.embedding_dense_backward and the forward lookup alone on the ML-20M tables (138,493 and 26,744 rows, 64 and
128 wide) at 2,048 to 10,000,000 uniformly drawn indices in fp16 and fp32 (device time by CUDA events, and host
time per call from back-to-back calls at the smallest size), and the device time of one epoch's data as
dataloading.py makes it inside ncf.py's timed epoch. Everything goes to DIR/ncf-probe.json.
`run --only gathers` times aten.embedding alone over row widths of 16 B to 8 KB, 2^18 to 2^22 rows, random and
in-order indices, and the embedding gradient of a contiguous and a column-slice gradient (DIR/gathers.json): the
measurements behind the row-gather rule of catalog/efficiency.yaml. benchmarks/results/ncf-probe holds one run of
each on an H200 (2026-12-04) and `report`'s output.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "ncf-probe"
NCF = ROOT / "benchmarks" / "gpu_models" / "ncf.py"
BATCHES = (65_536, 2**20, 10_000_000)
MODES = ("fp32", "o2", "autocast")
WARMUP, REPEATS = 3, 10
TABLES = ((138_493, 64), (138_493, 128), (26_744, 64), (26_744, 128))
LOOKUPS = (2_048, 65_536, 2**20, 10_000_000)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def device_seconds(torch, fn, warmup: int = WARMUP, repeats: int = REPEATS) -> float:
    """Median device time of `fn` by CUDA events around each call, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times)


def load_ncf():
    spec = importlib.util.spec_from_file_location("ncf_probe_model", NCF)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Trainer:
    """One NCF training setup (`mode`, see the module's docstring) at one batch size, step by step."""

    def __init__(self, ncf, mode: str, batch: int):
        import torch

        torch.manual_seed(0)
        self.torch, self.mode = torch, mode
        model = ncf.build_model().to("cuda")
        with torch.device("cuda"):
            self.users, self.items, self.labels = ncf.example_batch(batch)
        if mode == "o2":
            model = model.half()
            self.params = list(model.parameters())
            self.master = [p.detach().float().clone() for p in self.params]
            self.opt = torch.optim.Adam(self.master, lr=0.0045, betas=(0.25, 0.5), eps=1e-8, fused=True)
            self.scale = torch.full((), 2.0**16, device="cuda")
            self.found_inf = torch.zeros((), device="cuda")
        else:
            self.params = list(model.parameters())
            self.opt = torch.optim.Adam(self.params, lr=0.0045, betas=(0.25, 0.5), eps=1e-8, fused=True)
            self.scaler = torch.amp.GradScaler("cuda") if mode == "autocast" else None
        self.model = model

    def forward(self):
        torch = self.torch
        if self.mode == "autocast":
            with torch.autocast("cuda", dtype=torch.float16):
                out = self.model(self.users, self.items)
        else:
            out = self.model(self.users, self.items)
        # ncf.py: BCEWithLogitsLoss(reduction='none') (traced), then the mean in fp32
        loss = torch.nn.functional.binary_cross_entropy_with_logits(out.float(), self.labels, reduction="none")
        return torch.mean(loss.view(-1), 0)

    def backward(self, loss):
        if self.mode == "o2":
            (loss * self.scale).backward()
        elif self.scaler is not None:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()

    def optimizer(self):
        torch = self.torch
        if self.mode == "o2":
            grads = [p.grad.float() for p in self.params]  # apex: multi_tensor_scale fp16 -> fp32 master grads
            self.found_inf.zero_()
            torch._amp_foreach_non_finite_check_and_unscale_(grads, self.found_inf, 1.0 / self.scale)
            for m, g in zip(self.master, grads, strict=True):
                m.grad = g
            self.opt.step()
            with torch.no_grad():
                torch._foreach_copy_(self.params, self.master)  # masters back into the fp16 model
            for m in self.master:
                m.grad = None
        elif self.scaler is not None:
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            self.opt.step()
        for p in self.params:
            p.grad = None

    def step(self, events=None):
        ev = events or [None] * 4
        self._mark(ev[0])
        loss = self.forward()
        self._mark(ev[1])
        self.backward(loss)
        self._mark(ev[2])
        self.optimizer()
        self._mark(ev[3])

    @staticmethod
    def _mark(event):
        if event is not None:
            event.record()


def time_steps(tr: Trainer) -> dict:
    torch = tr.torch
    for _ in range(WARMUP):
        tr.step()
    torch.cuda.synchronize()
    phases = {"forward": [], "backward": [], "optimizer": [], "step": []}
    for _ in range(REPEATS):
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        tr.step(ev)
        torch.cuda.synchronize()
        for i, name in enumerate(("forward", "backward", "optimizer")):
            phases[name].append(ev[i].elapsed_time(ev[i + 1]) / 1e3)
        phases["step"].append(ev[0].elapsed_time(ev[3]) / 1e3)
    out = {k: statistics.median(v) for k, v in phases.items()}
    out["step_spread"] = (min(phases["step"]), max(phases["step"]))
    return out


def kernel_table(tr: Trainer) -> str:
    from torch.profiler import ProfilerActivity, profile

    torch = tr.torch
    tr.step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(2):
            tr.step()
        torch.cuda.synchronize()
    sort = "device_time_total" if hasattr(prof.key_averages()[0], "device_time_total") else "cuda_time_total"
    return prof.key_averages().table(sort_by=sort, row_limit=70, max_name_column_width=80)


def lookups(torch) -> list[dict]:
    """aten.embedding (forward) and aten.embedding_dense_backward alone, device time by CUDA events."""
    rows = []
    for dtype in (torch.float16, torch.float32):
        for num, dim in TABLES:
            weight = torch.randn(num, dim, device="cuda", dtype=dtype)
            for n in LOOKUPS:
                idx = torch.randint(0, num, (n,), device="cuda")
                grad = torch.randn(n, dim, device="cuda", dtype=dtype)

                fwd = functools.partial(torch.nn.functional.embedding, idx, weight)
                bwd = functools.partial(torch.ops.aten.embedding_dense_backward, grad, idx, num, -1, False)

                row = {"dtype": str(dtype).split(".")[-1], "rows": num, "dim": dim, "indices": n}
                row["forward_s"], row["backward_s"] = device_seconds(torch, fwd), device_seconds(torch, bwd)
                if n == LOOKUPS[0]:  # host time per call: back to back, the host issuing ahead of the device
                    for name, fn in (("forward_host_s", fwd), ("backward_host_s", bwd)):
                        torch.cuda.synchronize()
                        t0 = time.perf_counter()
                        for _ in range(200):
                            fn()
                        row[name] = (time.perf_counter() - t0) / 200
                        torch.cuda.synchronize()
                rows.append(row)
            torch.cuda.empty_cache()
    return rows


def epoch_data(torch, positives: int, users: int, items: int, batch: int) -> float:
    """Device seconds of one epoch's data as DLE's dataloading.TrainDataloader.get_epoch_data makes it, inside the
    timed epoch: 4 negatives per positive (users repeated, items drawn), a randperm of the whole epoch, each feature
    gathered by it and split into batches (median of 3 after 1 warm-up)."""
    user = torch.randint(0, users, (positives, 1), device="cuda")
    item = torch.randint(0, items, (positives, 1), device="cuda")
    label = torch.ones(positives, 1, device="cuda")

    def make():
        data = (
            torch.cat((user, user.repeat(4, 1))),
            torch.cat((item, torch.empty_like(item).repeat(4, 1).random_(0, items))),
            torch.cat((label, torch.zeros_like(label).repeat(4, 1))),
        )
        order = torch.randperm(positives * 5, device="cuda")
        return [t.view(-1)[order].split(batch)[:-1] for t in data]

    return device_seconds(torch, make, warmup=1, repeats=3)


GATHER_DIMS = (8, 32, 64, 128, 256, 512, 1024, 2048, 4096)  # fp16 rows of 16 B to 8 KB
GATHER_INDICES = (2**18, 2**20, 2**22)


def gathers(torch) -> list[dict]:
    """aten.embedding alone over row widths (fp16, 100,000-row table) and index counts, random and in-order
    indices, and aten.embedding_dense_backward of a contiguous and of a column-slice (non-contiguous) gradient:
    device time by CUDA events (median of 10 after 3 warm-ups)."""

    timed = functools.partial(device_seconds, torch)
    rows, num = [], 100_000
    for dim in GATHER_DIMS:
        weight = torch.randn(num, dim, device="cuda", dtype=torch.float16)
        for n in GATHER_INDICES:
            for order in ("random", "in-order"):
                if order == "random":
                    idx = torch.randint(0, num, (n,), device="cuda")
                else:
                    idx = torch.arange(n, device="cuda") % num
                row = {"dim": dim, "row_bytes": dim * 2, "indices": n, "order": order}
                row["forward_s"] = timed(functools.partial(torch.nn.functional.embedding, idx, weight))
                if order == "random" and dim in (64, 128) and n == 2**20:
                    wide = torch.randn(n, 2 * dim, device="cuda", dtype=torch.float16)
                    part, whole = wide[:, :dim], wide[:, :dim].contiguous()
                    for name, g in (("backward_contiguous_s", whole), ("backward_slice_s", part)):
                        row[name] = timed(
                            lambda g=g, idx=idx: torch.ops.aten.embedding_dense_backward(g, idx, num, -1, False)
                        )
                rows.append(row)
                log(
                    f"gather fp16 {dim:5d} wide, {n:>9,} {order:8s}: {row['forward_s'] * 1e6:8.1f} us"
                    + "".join(f", {k} {v * 1e6:.1f} us" for k, v in row.items() if k.startswith("backward"))
                )
        torch.cuda.empty_cache()
    return rows


def run(out: Path, only: str | None = None) -> None:
    import torch

    if not torch.cuda.is_available():
        print(
            "error: ncf_probe.py run needs a CUDA GPU and torch built for it; `report` runs anywhere", file=sys.stderr
        )
        sys.exit(2)
    out.mkdir(parents=True, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if only == "gathers":
        rows = gathers(torch)
        (out / "gathers.json").write_text(
            json.dumps(
                {
                    "device": torch.cuda.get_device_name(),
                    "torch": torch.__version__,
                    "date": time.strftime("%Y-%m-%d"),
                    "rows": rows,
                },
                indent=1,
            )
            + "\n"
        )
        return
    ncf = load_ncf()
    result = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d"),
        "steps": [],
    }
    tables = []
    for batch in BATCHES:
        for mode in MODES:
            tr = Trainer(ncf, mode, batch)
            t = time_steps(tr)
            t.update(mode=mode, batch=batch)
            result["steps"].append(t)
            log(
                f"{mode:8s} b={batch:>10,}: step {t['step'] * 1e3:8.2f} ms (fwd {t['forward'] * 1e3:.2f}, "
                f"bwd {t['backward'] * 1e3:.2f}, opt {t['optimizer'] * 1e3:.2f}); {batch / t['step'] / 1e6:.1f} M/s"
            )
            if batch != BATCHES[0]:
                tables.append(f"=== {mode} batch {batch}, 2 steps\n{kernel_table(tr)}\n")
            del tr
            torch.cuda.empty_cache()
            (out / "ncf-probe.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "ncf-kernels.txt").write_text("".join(tables))
    result["epoch_data_s"] = epoch_data(torch, ncf.EPOCH_SAMPLES // 5, ncf.USERS, ncf.ITEMS, 2**20)
    log(f"epoch data (get_epoch_data): {result['epoch_data_s'] * 1e3:.1f} ms")
    torch.cuda.empty_cache()
    result["lookups"] = lookups(torch)
    for r in result["lookups"]:
        log(
            f"{r['dtype']} {r['rows']}x{r['dim']} n={r['indices']:>10,}: fwd {r['forward_s'] * 1e6:9.1f} us, "
            f"bwd {r['backward_s'] * 1e6:9.1f} us"
        )
    (out / "ncf-probe.json").write_text(json.dumps(result, indent=1) + "\n")


# the probe's modes as advisor sees them, (profile, precision to estimate at): fp32 and O2 as the published rows
# are profiled (benchmarks/published.py: O2 as a 16-bit model), autocast as a user who trains with it profiles
# (`advisor profile --precision fp16-mixed`: autocast's casts recorded)
AS_ESTIMATED = {"fp32": ("fp32", "fp32"), "o2": ("fp16-mixed", "fp16-mixed"), "autocast": ("autocast", "fp16-mixed")}


def report(folder: Path, write: bool) -> str:
    """The probe's steps estimated by advisor on the catalog device its GPU's name matches (profiled as
    AS_ESTIMATED says), and its lookups against the row-gather rule (catalog/efficiency.yaml, row_gather); written
    to DIR/report.txt."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import published

    from advisor import api
    from advisor.catalog.lookup import find_device
    from advisor.catalog.schema import Efficiency
    from advisor.estimator import kernels
    from advisor.profiler.profile import profile_model

    source = folder / "ncf-probe.json"
    if not source.is_file():
        print(f"error: {source} not found: give --dir a folder that `run` wrote", file=sys.stderr)
        sys.exit(2)
    data = json.loads(source.read_text())
    cat = api.catalog()
    device = find_device(cat, data["device"].removeprefix("NVIDIA "))
    eff = cat.efficiency[device.efficiency]
    lines = [
        f"NCF training steps on {data['device']} (torch {data['torch']}, {data['date']}) against advisor's estimate "
        f"on the catalog's {device.id}",
        f"{'mode':9s} {'batch':>11s} {'measured':>11s} {'estimated':>11s} {'error':>7s}   (median step of 10)",
    ]
    profiles: dict = {}
    errors = []
    for step in data["steps"]:
        profiled, precision = AS_ESTIMATED[step["mode"]]
        if profiled == "autocast":
            if profiled not in profiles:
                profiles[profiled] = profile_model(
                    NCF, batch_size=8, device="meta", precision="fp16-mixed", optimizer="adam", name="ncf"
                )
            prof = profiles[profiled]
        else:
            row = {"id": "ncf-probe", "model": "ncf", "optimizer": "adam", "precision": profiled}
            prof = published.profile_for(row, None, profiles)
        est = api.estimate(prof, device.id, count=1, precision=precision, micro_batch=step["batch"], cat=cat)
        error = est.step_time_s / step["step"] - 1
        errors.append(abs(error))
        lines.append(
            f"{step['mode']:9s} {step['batch']:>11,} {step['step'] * 1e3:>8.2f} ms {est.step_time_s * 1e3:>8.2f} ms "
            f"{error:>+7.1%}"
        )
    lines.append(f"median |error| {statistics.median(errors):.1%}, max {max(errors):.1%} over {len(errors)} steps")
    gathers = folder / "gathers.json"
    if gathers.is_file() and eff.row_gather is not None:
        rule, rows = eff.row_gather, json.loads(gathers.read_text())["rows"]
        per_block = kernels.block_seconds(device, rule)
        lines += [
            "",
            f"aten.embedding alone (fp16, 100,000-row table) against its estimate: the longer of the row-gather "
            f"rule's blocks ({per_block * 1e9:.3f} ns each: {rule.sm_clocks_per_block:g} clocks over "
            f"{device.sm_count} SMs at the boost clock) and its bytes (rows read and written, the indices) at "
            f"the family's memory curve",
            f"{'row bytes':>9s} {'rows':>10s} {'order':8s} {'measured':>11s} {'blocks':>11s} {'bytes':>11s} "
            f"{'error':>7s}",
        ]
        gather_errors = []
        for r in rows:
            blocks = r["indices"] * -(-r["row_bytes"] // rule.bytes_per_block) * per_block
            moved = r["indices"] * (2 * r["row_bytes"] + 8)
            memory = moved / (device.memory_bandwidth * Efficiency.at(eff.memory, moved))
            error = max(blocks, memory) / r["forward_s"] - 1
            gather_errors.append(abs(error))
            lines.append(
                f"{r['row_bytes']:>9,} {r['indices']:>10,} {r['order']:8s} {r['forward_s'] * 1e6:>8.1f} us "
                f"{blocks * 1e6:>8.1f} us {memory * 1e6:>8.1f} us {error:>+7.1%}"
            )
        lines.append(
            f"median |error| {statistics.median(gather_errors):.1%}, max {max(gather_errors):.1%} over "
            f"{len(gather_errors)} lookups"
        )
    text = "\n".join(lines) + "\n"
    if write:
        (folder / "report.txt").write_text(text)
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, default=OUT)
    r.add_argument("--only", choices=("gathers",), help="only the gather sweep (DIR/gathers.json)")
    rep = sub.add_parser("report")
    rep.add_argument("--dir", type=Path, default=OUT)
    rep.add_argument("--no-write", action="store_true", help="print only; leave DIR/report.txt as it is")
    args = ap.parse_args()
    if args.cmd == "run":
        run(args.out, args.only)
    else:
        print(report(args.dir, not args.no_write), end="")


if __name__ == "__main__":
    main()
