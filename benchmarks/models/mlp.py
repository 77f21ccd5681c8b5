"""MLP: three hidden layers of 1024 on 512 features, 10 classes (benchmark family: MLP)."""

import torch
import torch.nn.functional as F
from torch import nn


def build_model():
    return nn.Sequential(
        nn.Linear(512, 1024),
        nn.ReLU(),
        nn.Linear(1024, 1024),
        nn.ReLU(),
        nn.Linear(1024, 1024),
        nn.ReLU(),
        nn.Linear(1024, 10),
    )


def example_batch(batch_size):
    return torch.randn(batch_size, 512), torch.randint(0, 10, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)
