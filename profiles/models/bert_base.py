"""BERT-base: 12 layers, 768 wide, 12 heads, MLP 3072, vocab 30522 (Devlin et al. 2019, "BERT: Pre-training of Deep
Bidirectional Transformers for Language Understanding"), with the masked-language-model head.

109,514,298 parameters with the MLM head (the paper's ~110M counts the pooler instead of the head).
Sequence 128: the paper pre-trains 90 % of the steps at 128 tokens and only the last 10 % at 512, so 128
is what most of the compute sees (profile bert_base.py with SEQ = 512 for phase 2).
Batch 128 sequences per device: a common per-device micro-batch for phase 1 on a 40-80 GB GPU (the profile
is linear in the batch, so any other batch is exact).
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_bert", Path(__file__).with_name("_bert.py"))
_bert = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bert)

BATCH_SIZE = 128
# The training recipe's samples per optimizer step over all devices (advisor trains every configuration at it).
GLOBAL_BATCH = 256
GLOBAL_BATCH_SOURCE = (
    "Devlin et al. 2019 (arXiv:1810.04805): 256 sequences per batch for 1M steps; the LAMB recipe (You et "
    "al. 2020) uses 64k"
)
SEQ = 128


def build_model():
    return _bert.BertForMLM(768, 12, 12)


def example_batch(batch_size):
    return _bert.mlm_batch(batch_size, SEQ)


training_step = _bert.mlm_step
