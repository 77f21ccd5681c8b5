"""Megatron-Core GPT 462B (H100 weak scaling).

Source: the Megatron-LM README's H100 weak-scaling table (images/model_table.png, added 2024-07-15 in commit
f2e5db4, Megatron-Core r0.8.0): vocabulary 131,072, sequence 4096; 112 layers, width 18432, 144 heads. The source
gives only widths, heads, layers, vocabulary and sequence; the parameter counts it prints (1.7B, 16B, 70B, 462B)
match 12Lh^2 plus an untied input and output table of 131,072 x h, so the MLP is 4h and the head is untied here;
learned positions as Megatron's GPT default.

461,542,920,192 parameters (untied output head; formula in _gpt.py). Batch 1: micro-batch 1 (the source does not
state it).
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_gpt", Path(__file__).with_name("_gpt.py"))
_gpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gpt)

BATCH_SIZE = 1
PRECISION = "bf16-mixed"
VOCAB, SEQ = 131072, 4096


def build_model():
    return _gpt.GPT(VOCAB, SEQ, 18432, 112, 144, tied=False)


def example_batch(batch_size):
    return _gpt.lm_batch(batch_size, SEQ, VOCAB)


training_step = _gpt.lm_step
