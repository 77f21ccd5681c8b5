"""Megatron-LM GPT 22B.

Source: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models" (arXiv:2205.05198),
Table 3: 48 layers, width 6144, 64 heads (also the 22B row of the Megatron-LM README, May 2022).

22,074,273,792 parameters (head tied to the token embedding, counted once; formula in _gpt.py). Batch 4: micro-batch
4 (global batch 4 on 8 GPUs with tensor parallelism 8).
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_gpt", Path(__file__).with_name("_gpt.py"))
_gpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gpt)

BATCH_SIZE = 4
PRECISION = "fp16-mixed"
VOCAB, SEQ = 51200, 2048


def build_model():
    return _gpt.GPT(VOCAB, SEQ, 6144, 48, 64, attention="megatron", dropout=0.1)


def example_batch(batch_size):
    return _gpt.lm_batch(batch_size, SEQ, VOCAB)


training_step = _gpt.lm_step
