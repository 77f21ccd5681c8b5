"""BLOOM 176B (BigScience 2022).

Source: bigscience-workshop/bigscience train/tr11-176B-ml/README.md: 70 layers, width 14336, 112 heads, vocabulary
250,880, sequence 2048, ALiBi instead of position embeddings, a LayerNorm after the word embedding, GELU MLP 4h,
output head tied to the embedding. The README's count: l(12h^2+13h) + vh + 4h.

176,247,271,424 parameters (head tied to the token embedding, counted once; formula in _gpt.py). Batch 2: micro-
batch 2, the run's (README: TP=4, PP=12, DP=8, MBS=2). Attention as Megatron-DeepSpeed ran it in 2022, before
flash attention (scores written to memory, fused softmax; see _gpt.py); train/tr11-176B-ml/tr11-176B-ml.slurm
sets no dropout flags, so Megatron's defaults (attention and hidden dropout 0.1) apply.
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_gpt", Path(__file__).with_name("_gpt.py"))
_gpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gpt)

BATCH_SIZE = 2
PRECISION = "bf16-mixed"
VOCAB, SEQ = 250880, 2048


def build_model():
    return _gpt.GPT(VOCAB, SEQ, 14336, 70, 112, positions=False, embed_norm=True, attention="megatron", dropout=0.1)


def example_batch(batch_size):
    return _gpt.lm_batch(batch_size, SEQ, VOCAB)


training_step = _gpt.lm_step
