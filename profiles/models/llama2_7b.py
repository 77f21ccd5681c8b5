"""Llama 2 7B (Touvron et al. 2023): 32 layers, 4096 wide, 32 heads, SwiGLU 11008, vocab 32000, 4k context.

6,738,415,616 parameters (untied output head). Batch 1 sequence per device: the usual micro-batch
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
GLOBAL_BATCH = 1024
GLOBAL_BATCH_SOURCE = "Touvron et al. 2023 (arXiv:2307.09288): a global batch of 4M tokens = 1024 sequences of 4096"
VOCAB, SEQ = 32000, 4096


def build_model():
    return _llama.Llama(VOCAB, 4096, 32, 32, 32, 11008, SEQ)


def example_batch(batch_size):
    return _llama.lm_batch(batch_size, SEQ, VOCAB)


training_step = _llama.lm_step
