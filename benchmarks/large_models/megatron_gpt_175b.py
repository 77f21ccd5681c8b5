"""GPT-3 175B (Brown et al. 2020, Table 2.1) as Megatron-LM trained it in 2022, before flash attention.

Source: Korthikanti et al. 2022 (arXiv:2205.05198), Table 3: 96 layers, width 12288, 96 heads, MLP 4x, sequence
2048, Megatron's padded GPT-2 vocabulary of 51,200; Megatron-LM's attention core of the time (scores written to
memory, fused scale-mask-softmax, attention and hidden dropout 0.1; see _gpt.py). gpt3_175b.py is the same model
with one fused attention kernel, as NeMo runs it.

174,615,846,912 parameters (head tied to the token embedding, counted once; formula in _gpt.py). Profiled at batch 2
(and 4): at batch 1 the attention core's reshapes are free views that batch 2 must copy, so runs at 1 and 2
would differ and the per-sample fit would fail; the rows' micro-batch 1 (the paper) comes from the row.
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
    return _gpt.GPT(VOCAB, SEQ, 12288, 96, 96, attention="megatron", dropout=0.1)


def example_batch(batch_size):
    return _gpt.lm_batch(batch_size, SEQ, VOCAB)


training_step = _gpt.lm_step
