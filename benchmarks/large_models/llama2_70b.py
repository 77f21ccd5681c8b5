"""Llama 2 70B.

Source: Touvron et al. 2023, "Llama 2" (arXiv:2307.09288), and the released config: 80 layers, width 8192, 64 heads
with 8 key/value heads, SwiGLU 28672, vocabulary 32,000, context 4096. Built with the shared Llama builder in
profiles/models/_llama.py (RMSNorm, rotary positions, grouped-query attention, SwiGLU, untied head).

68,976,648,192 parameters: 2Vh + L(2h^2 + 2h*kv*d + 3hf + 2h) + h with d = h/heads. Batch 1: micro-batch 1, as
NeMo's benchmark runs it.
"""

import importlib.util
from pathlib import Path

_path = Path(__file__).resolve().parents[2] / "profiles" / "models" / "_llama.py"
_spec = importlib.util.spec_from_file_location("_llama", _path)
_llama = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_llama)

BATCH_SIZE = 1
PRECISION = "bf16-mixed"
VOCAB, SEQ = 32000, 4096


def build_model():
    return _llama.Llama(VOCAB, 8192, 80, 64, 8, 28672, SEQ, theta=10000.0)


def example_batch(batch_size):
    return _llama.lm_batch(batch_size, SEQ, VOCAB)


training_step = _llama.lm_step
