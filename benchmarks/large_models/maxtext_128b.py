"""MaxText 128B benchmark model.

Source: MaxText's 2023 default decoder (AI-Hypercomputer/maxtext, MaxText/configs/base.yml and pyconfig.py at commit
9bc243c95): base width 2560, 8 heads of width 256, ReLU MLP 8192, 16 layers, vocabulary 32,768, output head tied to
the embedding, parallel attention+MLP block with one RMSNorm, RMSNorm on queries and keys, rotary positions;
global_parameter_scale=128 doubles heads and MLP, width and layers in turn (get_individual_scales), giving 64
layers, width 10240, 64 heads, MLP 65536; max_target_length 2048.

129,185,261,568 parameters (formula in _parallel.py). Batch 16: sequences per data-parallel replica,
per_device_batch_size 1 times tensor parallelism 16 (configs/largest_job/128b.sh, v5e).
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_parallel", Path(__file__).with_name("_parallel.py"))
_parallel = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_parallel)

BATCH_SIZE = 16
PRECISION = "bf16-mixed"
VOCAB, SEQ = 32768, 2048


def build_model():
    return _parallel.ParallelLM(VOCAB, SEQ, 10240, 64, 64, 64, 256, 65536, gated=False, qk_norm=True)


def example_batch(batch_size):
    return _parallel.lm_batch(batch_size, SEQ, VOCAB)


training_step = _parallel.lm_step
