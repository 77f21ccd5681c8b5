"""GNMT v2 on sentence pairs of one fixed length: 25 source and 25 target tokens, no padding (the layers are in
_gnmt.py). The shape benchmarks/gpu_local.py measured on the H200, where the model runs on random tokens of exactly
these lengths; the published rows, which train on WMT16's bucketed batches, use gnmt_wmt16.py.

The profile records 50 tokens per sample. Per token the cost is nearly length-independent (the LSTMs and the
classifier are per token), except the attention, whose cost per target token grows with the source length (at 25
tokens it is under 2 % of the FLOPs but about a sixth of the bytes moved). Batch 128 per device:
DeepLearningExamples' default.
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_gnmt", Path(__file__).with_name("_gnmt.py"))
_gnmt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gnmt)

BATCH_SIZE = 128
SRC, TGT = 25, 25

build_model, example_batch = _gnmt.entry_points(SRC, TGT, packed=SRC)
training_step = _gnmt.training_step
make_optimizer = _gnmt.make_optimizer
