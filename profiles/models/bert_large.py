"""BERT-large: 24 layers, 1024 wide, 16 heads, MLP 4096, vocab 30522 (Devlin et al. 2019, "BERT: Pre-training of Deep
Bidirectional Transformers for Language Understanding"), with the masked-language-model head.

335,174,458 parameters with the MLM head (the paper's ~340M counts the pooler instead of the head).
Sequence 128: the paper pre-trains 90 % of the steps at 128 tokens and only the last 10 % at 512, so 128
is what most of the compute sees (profile bert_large.py with SEQ = 512 for phase 2).
Batch 64 sequences per device: a common per-device micro-batch for phase 1 on a 40-80 GB GPU (the profile
is linear in the batch, so any other batch is exact).
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_bert", Path(__file__).with_name("_bert.py"))
_bert = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bert)

BATCH_SIZE = 64
# The training recipe's samples per optimizer step over all devices (advisor trains every configuration at it).
GLOBAL_BATCH = 256
GLOBAL_BATCH_SOURCE = (
    "Devlin et al. 2019 (arXiv:1810.04805): 256 sequences per batch for 1M steps; the LAMB recipe (You et "
    "al. 2020) uses 64k"
)
SEQ = 128


def build_model():
    return _bert.BertForMLM(1024, 24, 16)


def example_batch(batch_size):
    return _bert.mlm_batch(batch_size, SEQ)


training_step = _bert.mlm_step
