"""BERT-base fine-tuned on SQuAD v1.1 (Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers
for Language Understanding"): 12 layers, 768 wide, 12 heads, MLP 3072, with a span (start/end) head, at sequence 384.

109,488,386 parameters as NVIDIA DeepLearningExamples builds it (vocabulary padded to 30528, pooler kept, 2-way span
head): embeddings 23,841,792 + 12 layers x 7,087,872 + pooler 590,592 + head 1,538; the paper's "110M".

Why these shapes: the measured rows (Lambda's deeplearning-benchmark, bert_base_squad) run DeepLearningExamples'
run_squad.py with its defaults, max_seq_length 384 and doc_stride 128, padding every feature to 384 tokens. The
layers are in _bert_dle.py. Batch 96 per device: Lambda's fp16 batch on 24 GB GPUs.
"""

import importlib.util
from pathlib import Path

import torch

_spec = importlib.util.spec_from_file_location("_bert_dle", Path(__file__).with_name("_bert_dle.py"))
_bert = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bert)

BATCH_SIZE = 96
SEQ = 384


def build_model():
    return _bert.BertForQA(768, 12, 12)


def example_batch(batch_size):
    return _bert.squad_batch(batch_size, SEQ)


training_step = _bert.squad_step


def make_optimizer(parameters):
    # run_squad.py trains with (apex Fused) Adam
    return torch.optim.Adam(parameters, lr=3e-5)
