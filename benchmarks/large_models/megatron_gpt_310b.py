"""Megatron-LM GPT 310B.

Source: Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM"
(arXiv:2104.04473), Table 1; layer, width and head counts from examples/sc21/run_table_1.sh in NVIDIA/Megatron-LM
(commit 6985e58).

310,130,540,544 parameters (head tied to the token embedding, counted once; formula in _gpt.py). Profiled at batch 2
(and 4): at batch 1 the attention core's reshapes are free views that batch 2 must copy, so runs at 1 and 2
would differ and the per-sample fit would fail; the rows' micro-batch 1 (run_table_1.sh) comes from the row.
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_gpt", Path(__file__).with_name("_gpt.py"))
_gpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gpt)

BATCH_SIZE = 2
PRECISION = "fp16-mixed"
VOCAB, SEQ = 51200, 2048


def build_model():
    return _gpt.GPT(VOCAB, SEQ, 16384, 96, 128, attention="megatron", dropout=0.1)


def example_batch(batch_size):
    return _gpt.lm_batch(batch_size, SEQ, VOCAB)


training_step = _gpt.lm_step
