"""MaxText 32B benchmark model.

Source: MaxText's 2023 default decoder (AI-Hypercomputer/maxtext, MaxText/configs/base.yml and pyconfig.py at commit
76bd53b0f): base width 2560, 8 heads of width 256, ReLU MLP 8192, 16 layers, vocabulary 32,768, output head tied to
the embedding, parallel attention+MLP block with one RMSNorm, RMSNorm on queries and keys, rotary positions (the
code at this commit also normalises values; that scale of 256 per layer is left out); global_parameter_scale=32
doubles heads and MLP, width and layers in turn (get_individual_scales), giving 32 layers, width 10240, 32 heads,
MLP 32768; max_target_length 2048.

32,548,153,344 parameters (formula in _parallel.py). Batch 32: sequences per data-parallel replica,
per_device_batch_size 8 times tensor parallelism 4 (configs/v5p/32b.sh).
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_parallel", Path(__file__).with_name("_parallel.py"))
_parallel = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_parallel)

BATCH_SIZE = 32
PRECISION = "bf16-mixed"
VOCAB, SEQ = 32768, 2048


def build_model():
    return _parallel.ParallelLM(VOCAB, SEQ, 10240, 32, 32, 32, 256, 32768, gated=False, qk_norm=True)


def example_batch(batch_size):
    return _parallel.lm_batch(batch_size, SEQ, VOCAB)


training_step = _parallel.lm_step
