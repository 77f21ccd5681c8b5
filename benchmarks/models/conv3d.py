"""Small 3D CNN for clips or volumes: Conv3d-BatchNorm3d-ReLU stages with 3D pooling on 8 frames of 32x32
(benchmark family: 3D convolution)."""

import torch
import torch.nn.functional as F
from torch import nn


def stage(cin, cout):
    return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm3d(cout), nn.ReLU())


def build_model():
    return nn.Sequential(
        stage(3, 16),
        nn.MaxPool3d((1, 2, 2)),
        stage(16, 32),
        nn.MaxPool3d(2),
        stage(32, 64),
        nn.AdaptiveAvgPool3d(1),
        nn.Flatten(),
        nn.Linear(64, 10),
    )


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 8, 32, 32), torch.randint(0, 10, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)
