"""ResNet-style stem on 64x64 images: 7x7 stride-2 conv, BatchNorm, ReLU, 3x3 stride-2 max pool, two basic residual
blocks of 64 channels, adaptive average pooling, a 100-way head, Adam (benchmark family: CNN with a strided stem
and max pooling). Written on 2026-12-05, after the pooling calibration, as an unseen check: validated once, then
added unchanged."""

import torch
import torch.nn.functional as F
from torch import nn


class Basic(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.na = nn.BatchNorm2d(c)
        self.b = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.nb = nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(x + self.nb(self.b(F.relu(self.na(self.a(x))))))


def build_model():
    return nn.Sequential(
        nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(3, stride=2, padding=1),
        Basic(64),
        Basic(64),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 100),
    )


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 64, 64), torch.randint(0, 100, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)


def make_optimizer(parameters):
    return torch.optim.Adam(parameters, lr=1e-3)
