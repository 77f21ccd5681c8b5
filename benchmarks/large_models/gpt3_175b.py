"""GPT-3 175B (Brown et al. 2020, Table 2.1) as NeMo trains it, with one fused attention kernel
(megatron_gpt_175b.py is the same model as Megatron-LM ran it in 2022).

Source: Korthikanti et al. 2022 (arXiv:2205.05198), Table 3, and NVIDIA NeMo's GPT3-175B benchmark config: 96
layers, width 12288, 96 heads, MLP 4x, sequence 2048, Megatron's padded GPT-2 vocabulary of 51,200.

174,615,846,912 parameters (head tied to the token embedding, counted once; formula in _gpt.py). Batch 1: micro-
batch 1, as both sources run it.
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_gpt", Path(__file__).with_name("_gpt.py"))
_gpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gpt)

BATCH_SIZE = 1
PRECISION = "bf16-mixed"
VOCAB, SEQ = 51200, 2048


def build_model():
    return _gpt.GPT(VOCAB, SEQ, 12288, 96, 96)


def example_batch(batch_size):
    return _gpt.lm_batch(batch_size, SEQ, VOCAB)


training_step = _gpt.lm_step
