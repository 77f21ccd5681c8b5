"""VGG-style net with average pooling between stages (2x2 stride 2) and a 3x3 stride-1 max pool before the head,
48-96-192 channels with BatchNorm and ReLU on 32x32 images, dropout in the head, SGD with momentum (benchmark
family: CNN with average pooling). Written on 2026-12-05, after the pooling calibration, as an unseen check:
validated once, then added unchanged."""

import torch
import torch.nn.functional as F
from torch import nn


def stage(cin, cout):
    return [
        nn.Conv2d(cin, cout, 3, padding=1),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
        nn.Conv2d(cout, cout, 3, padding=1),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
    ]


def build_model():
    return nn.Sequential(
        *stage(3, 48),
        nn.AvgPool2d(2),
        *stage(48, 96),
        nn.AvgPool2d(2),
        *stage(96, 192),
        nn.MaxPool2d(3, 1, 1),
        nn.Flatten(),
        nn.Dropout(0.3),
        nn.Linear(192 * 8 * 8, 10),
    )


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)


def make_optimizer(parameters):
    return torch.optim.SGD(parameters, lr=0.01, momentum=0.9)
