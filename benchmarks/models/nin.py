"""Network-in-Network-style CNN for 32x32 images (benchmark family: 1x1-heavy CNN): three mlpconv blocks, each a
spatial convolution (5x5, 5x5, 3x3) followed by two 1x1 convolutions, ReLU after each, with 3x3 stride-2 max pooling
and dropout between blocks, a 1x1 classifier to 10 channels and global average pooling; SGD with momentum. Written on
2026-12-05, after the calibration's added 1x1 layers with few channels, as an unseen check: validated once, then added
unchanged."""

import torch
import torch.nn.functional as F
from torch import nn


def mlpconv(cin, cout, kernel, inner):
    return [
        nn.Conv2d(cin, cout, kernel, padding=kernel // 2),
        nn.ReLU(),
        nn.Conv2d(cout, inner, 1),
        nn.ReLU(),
        nn.Conv2d(inner, inner, 1),
        nn.ReLU(),
    ]


def build_model():
    return nn.Sequential(
        *mlpconv(3, 96, 5, 64),
        nn.MaxPool2d(3, stride=2, padding=1),
        nn.Dropout(0.5),
        *mlpconv(64, 96, 5, 96),
        nn.MaxPool2d(3, stride=2, padding=1),
        nn.Dropout(0.5),
        *mlpconv(96, 96, 3, 96)[:4],
        nn.Conv2d(96, 10, 1),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    )


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)


def make_optimizer(parameters):
    return torch.optim.SGD(parameters, lr=0.05, momentum=0.9, weight_decay=1e-4)
