"""Llama 3.1 405B (Meta 2024, "The Llama 3 Herd of Models", arXiv:2407.21783, Table 3): 126 layers, 16384 wide,
128 heads with 8 KV heads, SwiGLU 53248, vocab 128256, RoPE base 500,000, pre-trained at 8k context.

405,853,388,800 parameters (untied output head): 2·V·h + L·(2h² + 2·h·kv·d + 3·h·f + 2h) + h with d = h/heads.
Batch 1 sequence per device: the micro-batch the paper's 4D layout (TP 8 × PP 16 × CP × FSDP) runs; larger global
batches come from data parallelism and the pipeline's micro-batches.
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
    "most of the 405B's pre-training"
)
VOCAB, SEQ = 128256, 8192


def build_model():
    return _llama.Llama(VOCAB, 16384, 126, 128, 8, 53248, SEQ, theta=500000.0)


def example_batch(batch_size):
    return _llama.lm_batch(batch_size, SEQ, VOCAB)


training_step = _llama.lm_step
