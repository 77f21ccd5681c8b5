"""Temporal convolutional network (benchmark family: dilated 1D CNN): residual blocks of two dilated Conv1d
(kernel 3, dilation 1, 2, 4, 8) with BatchNorm1d and GELU over 40 channels, on 2,000 steps of an 8-channel
signal, classified into 5 classes after global average pooling."""

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, c, dilation):
        super().__init__()
        self.c1 = nn.Conv1d(c, c, 3, padding=dilation, dilation=dilation)
        self.n1 = nn.BatchNorm1d(c)
        self.c2 = nn.Conv1d(c, c, 3, padding=dilation, dilation=dilation)
        self.n2 = nn.BatchNorm1d(c)

    def forward(self, x):
        return x + self.n2(self.c2(F.gelu(self.n1(self.c1(x)))))


def build_model():
    return nn.Sequential(
        nn.Conv1d(8, 40, 1),
        *[Block(40, d) for d in (1, 2, 4, 8)],
        nn.AdaptiveAvgPool1d(1),
        nn.Flatten(),
        nn.Linear(40, 5),
    )


def example_batch(batch_size):
    return torch.randn(batch_size, 8, 2000), torch.randint(0, 5, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)
