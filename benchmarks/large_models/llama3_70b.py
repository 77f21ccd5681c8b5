"""Llama 3 70B.

Source: Dubey et al. 2024, "The Llama 3 Herd of Models" (arXiv:2407.21783), Table 3: 80 layers, width 8192, 64 heads
with 8 key/value heads, SwiGLU 28672, vocabulary 128,256, RoPE base 500,000, context 8192. Built with the shared
Llama builder in profiles/models/_llama.py (RMSNorm, rotary positions, grouped-query attention, SwiGLU, untied
head).

70,553,706,496 parameters: 2Vh + L(2h^2 + 2h*kv*d + 3hf + 2h) + h with d = h/heads. Batch 1: micro-batch 1, as the
NeMo and Megatron-Bridge benchmarks run it.
"""

import importlib.util
from pathlib import Path

_path = Path(__file__).resolve().parents[2] / "profiles" / "models" / "_llama.py"
_spec = importlib.util.spec_from_file_location("_llama", _path)
_llama = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_llama)

BATCH_SIZE = 1
PRECISION = "bf16-mixed"
VOCAB, SEQ = 128256, 8192


def build_model():
    return _llama.Llama(VOCAB, 8192, 80, 64, 8, 28672, SEQ, theta=500000.0)


def example_batch(batch_size):
    return _llama.lm_batch(batch_size, SEQ, VOCAB)


training_step = _llama.lm_step
