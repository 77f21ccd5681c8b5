"""BERT-large fine-tuned on SQuAD v1.1 (Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers
for Language Understanding"): 24 layers, 1024 wide, 16 heads, MLP 4096, with a span (start/end) head, at sequence 384.

335,150,082 parameters as NVIDIA DeepLearningExamples builds it (vocabulary padded to 30528, pooler kept, 2-way span
head): embeddings 31,789,056 + 24 layers x 12,596,224 + pooler 1,049,600 + head 2,050; the paper's "340M".

Why these shapes: every measured row runs DeepLearningExamples' run_squad.py with its defaults, max_seq_length 384
and doc_stride 128, and pads every feature to 384 tokens, so each sequence costs the full 384 positions. The layers
are in _bert_dle.py (attention written out as that code computes it). Batch 32 per device: the DeepLearningExamples
A100 table's batch (TF32 and mixed precision).
"""

import importlib.util
from pathlib import Path

import torch

_spec = importlib.util.spec_from_file_location("_bert_dle", Path(__file__).with_name("_bert_dle.py"))
_bert = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bert)

BATCH_SIZE = 32
SEQ = 384


def build_model():
    return _bert.BertForQA(1024, 24, 16)


def example_batch(batch_size):
    return _bert.squad_batch(batch_size, SEQ)


training_step = _bert.squad_step


def make_optimizer(parameters):
    # run_squad.py trains with (apex Fused) Adam, lr 3e-5
    return torch.optim.Adam(parameters, lr=3e-5)
