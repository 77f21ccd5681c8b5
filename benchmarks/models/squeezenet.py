"""SqueezeNet-style CNN for 32x32 images (benchmark family: fire-module CNN): each fire module squeezes its input
with a 1x1 convolution to a few channels (12-28) and expands it with parallel 1x1 and 3x3 convolutions whose outputs
are concatenated; biases and ReLU, no normalization, a 1x1 classifier and global average pooling."""

import torch
import torch.nn.functional as F
from torch import nn


class Fire(nn.Module):
    def __init__(self, cin, squeeze, expand):
        super().__init__()
        self.s = nn.Conv2d(cin, squeeze, 1)
        self.e1 = nn.Conv2d(squeeze, expand, 1)
        self.e3 = nn.Conv2d(squeeze, expand, 3, padding=1)

    def forward(self, x):
        y = F.relu(self.s(x))
        return torch.cat([F.relu(self.e1(y)), F.relu(self.e3(y))], 1)


def build_model():
    return nn.Sequential(
        nn.Conv2d(3, 48, 3, padding=1),
        nn.ReLU(),
        Fire(48, 12, 40),  # 80 channels
        Fire(80, 16, 56),  # 112
        nn.MaxPool2d(2),
        Fire(112, 24, 80),  # 160
        Fire(160, 28, 96),  # 192
        nn.Conv2d(192, 10, 1),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    )


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)
