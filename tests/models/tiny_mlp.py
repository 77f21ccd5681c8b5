"""A two-layer MLP: the smallest model that exercises forward, backward and the optimizer."""

import torch
from torch import nn


def build_model():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def example_batch(batch_size):
    return torch.randn(batch_size, 16)
