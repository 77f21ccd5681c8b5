"""Llama 3.1 405B.

Source: Dubey et al. 2024, "The Llama 3 Herd of Models" (arXiv:2407.21783), Table 3: 126 layers, width 16384, 128
heads with 8 key/value heads, SwiGLU 53248, vocabulary 128,256, RoPE base 500,000; pre-trained at context 8192.
Built with the shared Llama builder in profiles/models/_llama.py (RMSNorm, rotary positions, grouped-query
attention, SwiGLU, untied head).

405,853,388,800 parameters: 2Vh + L(2h^2 + 2h*kv*d + 3hf + 2h) + h with d = h/heads. Batch 1: micro-batch 1, as the
Llama 3 paper's pipeline schedule and Megatron-Bridge run it.
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
    return _llama.Llama(VOCAB, 16384, 126, 128, 8, 53248, SEQ, theta=500000.0)


def example_batch(batch_size):
    return _llama.lm_batch(batch_size, SEQ, VOCAB)


training_step = _llama.lm_step
