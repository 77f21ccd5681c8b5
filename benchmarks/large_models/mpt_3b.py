"""MPT 3B as llm-foundry benchmarks it.

Source: MosaicML llm-foundry scripts/train/yamls/pretrain/mpt-3b.yaml (d_model, n_heads, n_layers, expansion_ratio
4, vocabulary 50,368) with MPT's defaults: learned positions, biases, LayerNorm, GELU, head tied to the embedding;
the parameter count matches the NumParams column of scripts/train/benchmarking/README.md exactly at sequence 2048.

2,651,837,440 parameters (head tied to the token embedding, counted once; formula in _gpt.py). Batch 8: micro-batch
8, the llm-foundry H100 benchmark's.
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_gpt", Path(__file__).with_name("_gpt.py"))
_gpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gpt)

BATCH_SIZE = 8
PRECISION = "bf16-mixed"
VOCAB, SEQ = 50368, 2048


def build_model():
    return _gpt.GPT(VOCAB, SEQ, 2560, 32, 20)


def example_batch(batch_size):
    return _gpt.lm_batch(batch_size, SEQ, VOCAB)


training_step = _gpt.lm_step
