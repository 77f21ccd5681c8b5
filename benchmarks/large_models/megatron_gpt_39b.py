"""Megatron-LM GPT 39B.

Source: Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM"
(arXiv:2104.04473), Table 1; layer, width and head counts from examples/sc21/run_table_1.sh in NVIDIA/Megatron-LM
(commit 6985e58).

39,096,041,472 parameters (head tied to the token embedding, counted once; formula in _gpt.py). Batch 4: micro-batch
4, as run_table_1.sh runs it.
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
    return _gpt.GPT(VOCAB, SEQ, 8192, 48, 64, attention="megatron", dropout=0.1)


def example_batch(batch_size):
    return _gpt.lm_batch(batch_size, SEQ, VOCAB)


training_step = _gpt.lm_step
