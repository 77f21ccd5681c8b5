"""GoogLeNet-style CNN for 32x32 images (benchmark family: multi-branch CNN): inception modules of four parallel
branches (1x1; 1x1 then 3x3; 1x1 then 5x5; 3x3 max pooling then 1x1), each convolution followed by BatchNorm and
ReLU, the branches concatenated. Most channel counts (40, 24, 12, 88, 72, 56 ...) are not multiples of 16."""

import torch
import torch.nn.functional as F
from torch import nn


def unit(cin, cout, k):
    return nn.Sequential(nn.Conv2d(cin, cout, k, padding=k // 2, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class Inception(nn.Module):
    def __init__(self, cin, n1, r3, n3, r5, n5, pool):
        super().__init__()
        self.b1 = unit(cin, n1, 1)
        self.b3 = nn.Sequential(unit(cin, r3, 1), unit(r3, n3, 3))
        self.b5 = nn.Sequential(unit(cin, r5, 1), unit(r5, n5, 5))
        self.bp = nn.Sequential(nn.MaxPool2d(3, 1, 1), unit(cin, pool, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b3(x), self.b5(x), self.bp(x)], 1)


def build_model():
    return nn.Sequential(
        unit(3, 40, 3),
        Inception(40, 24, 24, 40, 8, 12, 12),  # 88 channels at 32x32
        nn.MaxPool2d(2),
        Inception(88, 40, 40, 72, 12, 24, 24),  # 160 at 16x16
        Inception(160, 56, 56, 88, 12, 24, 24),  # 192
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(192, 10),
    )


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)
