"""GNMT v2 as DeepLearningExamples trains it on WMT16 en-de: batches bucketed by length and padded to their longest
pair (the layers are in _gnmt.py; the published GNMT rows, DeepLearningExamples' and Lambda's, profile this file).

Why these shapes: the rows count each sentence's own tokens, source + target, while the GPU computes every padded
position. benchmarks/gnmt_padding.py follows DeepLearningExamples' sampler (5 buckets 10 tokens wide, 128 pairs a GPU
padded to their longest source and target) over WMT16 lengths with the one published figure of their distribution
(47.85 BPE tokens a pair, DeepLearningExamples' TensorFlow GNMT README) and an assumed shape: a pair counts 25.70 +
24.66 = 50.36 tokens (TOKENS_COUNTED, by which benchmarks/published.py converts) and computes 31.53 source and
30.53 target positions, 1.232 times as many (1.213 to 1.257 over the shapes tried). Here: 31 source and 31 target
positions (62 against 62.06), of which 26 source positions (25.70) go through the bidirectional first layer,
which reads a packed sequence.
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_gnmt", Path(__file__).with_name("_gnmt.py"))
_gnmt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gnmt)

BATCH_SIZE = 128
SRC, TGT, PACKED = 31, 31, 26
TOKENS_COUNTED = 50.36  # source + target tokens a pair as the rows count them (benchmarks/gnmt_padding.py)

build_model, example_batch = _gnmt.entry_points(SRC, TGT, packed=PACKED)
training_step = _gnmt.training_step
make_optimizer = _gnmt.make_optimizer
