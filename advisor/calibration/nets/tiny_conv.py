"""Calibration net: a few tiny conv / batch-norm / ReLU layers and a linear head, small enough that every
op costs about its fixed eager overhead. `advisor calibrate` times its phases to measure that overhead."""

import torch
from torch import nn

CHANNELS, SIDE = 4, 8


def build_model():
    return nn.Sequential(
        nn.Conv2d(3, CHANNELS, 3, padding=1),
        nn.BatchNorm2d(CHANNELS),
        nn.ReLU(),
        nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1),
        nn.BatchNorm2d(CHANNELS),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1),
        nn.BatchNorm2d(CHANNELS),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(CHANNELS, 10),
    )


def example_batch(batch_size):
    return torch.randn(batch_size, 3, SIDE, SIDE)
