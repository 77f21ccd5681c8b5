"""How many token positions DeepLearningExamples' GNMT computes per token it counts (the shapes of gnmt_wmt16.py).

    python benchmarks/gnmt_padding.py

The published GNMT rows report tokens per second, counting each sentence's own tokens, while the GPU computes
batches padded to their longest sentence. DeepLearningExamples' PyTorch GNMT (train.py, seq2seq/data/sampler.py,
seq2seq/train/trainer.py, at commit 729963dd) does this:

- every sentence gets BOS and EOS; pairs with a side longer than 50 (with both) are dropped;
- BucketingSampler puts a pair in bucket max(src // 10, tgt // 10) (5 buckets 10 wide; 50 joins the last) and
  draws each global batch from one bucket; each GPU's 128 pairs are padded to their longest source and target;
- the first encoder layer reads a packed sequence (no padded steps); the other layers, the attention and the
  classifier run on the padded tensors, the decoder on the target without its last token;
- a step counts sum(src_length) + sum(tgt_length - 1) tokens.

What the code does not fix is WMT16's length distribution, which this project cannot download. One figure of it is
published: DeepLearningExamples' TensorFlow GNMT README (same download script, same BPE) logs 139,640.48 tokens/s at
2,918.36 sentences/s (and 173,461.27 at 3,625.19), and its nmt.py derives tokens/s as sentences/s times the mean
source + target BPE tokens of the pairs below 50 tokens a side: 47.85 tokens a pair. The rest is an assumption:
source lengths gamma-distributed (shape 2 to 4), the target the source times a ratio (0.95 to 1.1) and a
log-normal spread (0.1 to 0.2), the scale chosen to give that mean. Over that whole grid the computed positions
per counted token stay within a few percent, which is why the model file can take the central case.

Prints, per assumption, the counted source and target tokens and the padded source and target positions per pair,
and their ratio. Deterministic (fixed seed); takes about half a minute on two cores.
"""

from __future__ import annotations

import itertools

import torch

PAIRS = 400_000
MEAN_RAW = 139_640.48 / 2_918.36  # TensorFlow GNMT README: tokens/s over sentences/s = mean src + tgt BPE tokens
TF_LIMIT, DLE_LIMIT = 49, 48  # raw tokens a side: TF keeps len < 50; PyTorch keeps len + 2 (BOS, EOS) <= 50
BUCKET_WIDTH, BUCKETS, PER_GPU = 10, 5, 128
CENTRAL = (3.0, 1.0, 0.15)  # gamma shape, target/source ratio, spread: the case gnmt_wmt16.py takes


def lengths(shape: float, ratio: float, spread: float, scale: float, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    gamma = torch._standard_gamma(torch.full((PAIRS,), shape, dtype=torch.float64), generator=g)
    src = (gamma * scale / shape).round().clamp(min=1)
    noise = torch.randn(PAIRS, dtype=torch.float64, generator=g) * spread
    tgt = (src * ratio * noise.exp()).round().clamp(min=1)
    return src, tgt


def fitted_scale(shape: float, ratio: float, spread: float) -> float:
    """The gamma mean that gives MEAN_RAW over the pairs TensorFlow GNMT keeps (bisection)."""
    lo, hi = 5.0, 80.0
    for _ in range(24):
        mid = (lo + hi) / 2
        src, tgt = lengths(shape, ratio, spread, mid)
        keep = (src <= TF_LIMIT) & (tgt <= TF_LIMIT)
        lo, hi = (mid, hi) if float((src + tgt)[keep].mean()) < MEAN_RAW else (lo, mid)
    return (lo + hi) / 2


def padding(shape: float, ratio: float, spread: float, per_gpu: int = PER_GPU) -> dict:
    """Mean counted and computed positions per pair under DeepLearningExamples' bucketing."""
    src, tgt = lengths(shape, ratio, spread, fitted_scale(shape, ratio, spread))
    keep = (src <= DLE_LIMIT) & (tgt <= DLE_LIMIT)
    s, t = src[keep] + 2, tgt[keep] + 2  # with BOS and EOS
    bucket = torch.maximum(s // BUCKET_WIDTH, t // BUCKET_WIDTH).clamp(max=BUCKETS - 1)
    g = torch.Generator().manual_seed(1)
    sums = torch.zeros(4, dtype=torch.float64)
    pairs = 0
    for b in range(BUCKETS):
        idx = torch.nonzero(bucket == b).flatten()
        idx = idx[torch.randperm(len(idx), generator=g)]
        n = len(idx) // per_gpu * per_gpu
        sb, tb = s[idx[:n]].view(-1, per_gpu), t[idx[:n]].view(-1, per_gpu)
        sums += torch.stack([sb.sum(), (tb - 1).sum(), sb.amax(1).sum() * per_gpu, (tb.amax(1) - 1).sum() * per_gpu])
        pairs += n
    src_counted, tgt_counted, src_padded, tgt_padded = (sums / pairs).tolist()
    return {
        "src_counted": src_counted,
        "tgt_counted": tgt_counted,
        "src_padded": src_padded,
        "tgt_padded": tgt_padded,
        "ratio": (src_padded + tgt_padded) / (src_counted + tgt_counted),
    }


def main() -> None:
    print(f"mean source + target BPE tokens a pair (TensorFlow GNMT README): {MEAN_RAW:.2f}")
    print(f"{'shape':>5} {'ratio':>5} {'spread':>6} | counted src tgt | padded src tgt | padded/counted")
    results = {}
    for shape, ratio, spread in itertools.product((2.0, 3.0, 4.0), (0.95, 1.0, 1.1), (0.1, 0.15, 0.2)):
        r = results[shape, ratio, spread] = padding(shape, ratio, spread)
        print(
            f"{shape:5.1f} {ratio:5.2f} {spread:6.2f} | {r['src_counted']:7.2f} {r['tgt_counted']:6.2f} | "
            f"{r['src_padded']:6.2f} {r['tgt_padded']:6.2f} | {r['ratio']:.3f}"
        )
    ratios = [r["ratio"] for r in results.values()]
    c = results[CENTRAL]
    print(f"padded/counted over the grid: {min(ratios):.3f} to {max(ratios):.3f}")
    print(
        f"central case {CENTRAL}: counted {c['src_counted']:.2f} + {c['tgt_counted']:.2f} = "
        f"{c['src_counted'] + c['tgt_counted']:.2f} tokens a pair, computed {c['src_padded']:.2f} source and "
        f"{c['tgt_padded']:.2f} target positions"
    )
    for per_gpu in (256, 512):
        print(f"at {per_gpu} pairs a GPU: padded/counted {padding(*CENTRAL, per_gpu=per_gpu)['ratio']:.3f}")


if __name__ == "__main__":
    main()
