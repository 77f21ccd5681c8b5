"""A 2-layer LSTM word language model: the "medium" model of Zaremba et al. 2014 ("Recurrent Neural
Network Regularization") on Penn Treebank, as in PyTorch's word_language_model example.

Vocab 10000, embedding and hidden size 650, 2 LSTM layers (torch.nn.LSTM, two bias vectors per gate set),
dropout 0.5, a 650 -> 10000 decoder (not tied), truncated back-propagation over 35 steps.
Parameters: embedding 10000*650 = 6,500,000; LSTM 2 * (4*650*(650+650) + 2*4*650) = 6,770,400;
decoder 650*10000 + 10000 = 6,510,000; total 19,780,400.

Batch 20 sequences: the paper's. Profiled in fp32: that is how this model is trained (the paper's recipe,
and an LSTM this small gains little from mixed precision, whose cuDNN RNN kernels need fp16 rather than bf16).
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH_SIZE = 20
# The training recipe's samples per optimizer step over all devices (advisor trains every configuration at it).
GLOBAL_BATCH = 20
GLOBAL_BATCH_SOURCE = "Zaremba et al. 2014 (arXiv:1409.2329): mini-batch of 20 sequences of 35 steps"
PRECISION = "fp32"
VOCAB, DIM, LAYERS, STEPS = 10000, 650, 2, 35


class LSTMLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, DIM)
        self.drop = nn.Dropout(0.5)
        self.lstm = nn.LSTM(DIM, DIM, LAYERS, dropout=0.5, batch_first=True)
        self.decoder = nn.Linear(DIM, VOCAB)

    def forward(self, tokens):
        out, _ = self.lstm(self.drop(self.embedding(tokens)))
        return self.decoder(self.drop(out))


def build_model():
    return LSTMLM()


def example_batch(batch_size):
    return torch.randint(0, VOCAB, (batch_size, STEPS)), torch.randint(0, VOCAB, (batch_size, STEPS))


def training_step(model, batch):
    tokens, labels = batch
    return F.cross_entropy(model(tokens).reshape(-1, VOCAB), labels.reshape(-1))
