"""Llama 3 8B (Meta 2024): 32 layers, 4096 wide, 32 heads with 8 KV heads, SwiGLU 14336, vocab 128256, 8k context.

8,030,261,248 parameters (untied output head). Batch 1 sequence per device: the usual micro-batch
at this length under FSDP or tensor parallelism (larger global batches come from data parallelism
and gradient accumulation).
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_llama", Path(__file__).with_name("_llama.py"))
_llama = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_llama)

BATCH_SIZE = 1
# The training recipe's samples per optimizer step over all devices (advisor trains every configuration at it).
GLOBAL_BATCH = 2048
GLOBAL_BATCH_SOURCE = (
    "Llama 3 paper (arXiv:2407.21783, section 3.4.1): 16M tokens per step = 2048 sequences of 8192 for "
    "most of pre-training (stated for the 405B; the 8B and 70B batch is not published separately)"
)
VOCAB, SEQ = 128256, 8192


def build_model():
    return _llama.Llama(VOCAB, 4096, 32, 32, 8, 14336, SEQ, theta=500000.0)


def example_batch(batch_size):
    return _llama.lm_batch(batch_size, SEQ, VOCAB)


training_step = _llama.lm_step
