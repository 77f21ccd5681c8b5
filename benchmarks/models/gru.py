"""GRU language model: embedding, two GRU layers of 320, a linear head over 2000 tokens, 48 steps, SGD with
momentum (benchmark family: GRU)."""

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, SEQ, DIM = 2000, 48, 320


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.gru = nn.GRU(DIM, DIM, num_layers=2, batch_first=True)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, tokens):
        out, _ = self.gru(self.emb(tokens))
        return self.head(out)


def build_model():
    return Net()


def example_batch(batch_size):
    return torch.randint(0, VOCAB, (batch_size, SEQ + 1))


def training_step(model, batch):
    logits = model(batch[:, :-1])
    return F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))


def make_optimizer(parameters):
    return torch.optim.SGD(parameters, lr=0.1, momentum=0.9)
