"""PaLM 540B (Chowdhery et al. 2022, "PaLM: Scaling Language Modeling with Pathways", arXiv:2204.02311).

Table 1: 118 layers, width 18432, 48 heads of width 256, MLP 73728 (4x width) with SwiGLU; section 2: parallel
attention and MLP blocks, multi-query attention (one key/value head), rotary positions, no biases in dense layers or
layer norms, input and output embeddings shared, a 256k SentencePiece vocabulary (256,000 here); sequence 2048.

540,356,474,880 parameters (the paper: 540.35B; formula in _parallel.py). Batch 4: 2048 sequences per step over 512
data-parallel replicas (12-way model parallelism on 6144 chips), section 4.
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_parallel", Path(__file__).with_name("_parallel.py"))
_parallel = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_parallel)

BATCH_SIZE = 4
PRECISION = "bf16-mixed"
VOCAB, SEQ = 256000, 2048


def build_model():
    return _parallel.ParallelLM(VOCAB, SEQ, 18432, 118, 48, 1, 256, 73728, gated=True, norm="layer")


def example_batch(batch_size):
    return _parallel.lm_batch(batch_size, SEQ, VOCAB)


training_step = _parallel.lm_step
