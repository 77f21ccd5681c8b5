"""1D CNN keyword spotter: strided Conv1d / BatchNorm1d / ReLU layers on one second of raw 16 kHz audio, global
average pooling and a 12-way linear head, Adam (benchmark family: 1D CNN on audio). Written on 2026-12-05, after
the CPU convolution setup was fitted; nothing was fitted on it."""

import torch
import torch.nn.functional as F
from torch import nn


def build_model():
    layers, cin = [], 1
    for cout, stride in ((32, 4), (64, 4), (64, 2), (128, 2)):
        layers += [nn.Conv1d(cin, cout, 9, stride, 4, bias=False), nn.BatchNorm1d(cout), nn.ReLU()]
        cin = cout
    layers += [nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(cin, 12)]
    return nn.Sequential(*layers)


def example_batch(batch_size):
    return torch.randn(batch_size, 1, 16000), torch.randint(0, 12, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)


def make_optimizer(parameters):
    return torch.optim.Adam(parameters, lr=1e-3)
