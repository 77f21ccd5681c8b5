"""BERT-large phase-1 pre-training (Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers for
Language Understanding") at sequence 128, as NVIDIA DeepLearningExamples' run_pretraining.py runs it: 24 layers,
1024 wide, 16 heads, MLP 4096, masked-LM and next-sentence heads.

336,232,258 parameters as DeepLearningExamples builds it (vocabulary padded to 30528): embeddings 31,789,056 +
24 layers x 12,596,224 + pooler 1,049,600 + masked-LM transform 1,051,648 + decoder bias 30,528 (its weight is the
word embedding) + next-sentence head 2,050; the paper's "340M".

Why these shapes: the measured rows (the DeepLearningExamples BERT README's pre-training tables, sequence 128) run
run_pretraining.sh phase 1 with max_predictions_per_seq 20 and the default dense_seq_output path, which gathers the
masked positions and runs the masked-LM head (a 1024 x 30528 decoder) on those only. Here every sequence has the
cap of 20 masked positions (15 % of 128 is 19.2, so the measured runs average slightly fewer). profiles/models/
bert_large.py instead runs the head on all 128 positions, about 8 % more FLOPs per sequence than the measured run.
The layers are in _bert_dle.py. Batch 64 per device: the DGX-1 mixed-precision micro-batch.
"""

import importlib.util
from pathlib import Path

import torch

_spec = importlib.util.spec_from_file_location("_bert_dle", Path(__file__).with_name("_bert_dle.py"))
_bert = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bert)

BATCH_SIZE = 64
SEQ, PREDICTIONS = 128, 20


def build_model():
    return _bert.BertForPreTraining(1024, 24, 16)


def example_batch(batch_size):
    return _bert.pretrain_batch(batch_size, SEQ, PREDICTIONS)


training_step = _bert.pretrain_step


def make_optimizer(parameters):
    # run_pretraining.py trains with (fused) LAMB, which torch does not ship; Adam keeps the same two moments per
    # parameter and a similar elementwise cost (LAMB adds two norms per tensor)
    return torch.optim.Adam(parameters, lr=6e-3)
