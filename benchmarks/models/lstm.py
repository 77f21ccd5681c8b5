"""LSTM language model: embedding, two LSTM layers of 256, a linear head; 64 tokens (benchmark family: RNN)."""

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, SEQ, DIM = 1000, 64, 256


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.lstm = nn.LSTM(DIM, DIM, num_layers=2, batch_first=True)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, tokens):
        out, _ = self.lstm(self.emb(tokens))
        return self.head(out)


def build_model():
    return Net()


def example_batch(batch_size):
    return torch.randint(0, VOCAB, (batch_size, SEQ + 1))


def training_step(model, batch):
    logits = model(batch[:, :-1])
    return F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
