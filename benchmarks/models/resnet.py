"""ResNet-ish CNN: basic residual blocks (16-32-64 channels) on 32x32 images (benchmark family: CNN)."""

import torch
import torch.nn.functional as F
from torch import nn


class Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.skip = nn.Sequential()
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        return F.relu(self.b2(self.c2(y)) + self.skip(x))


def build_model():
    layers = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    for cin, cout, stride in ((16, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2), (64, 64, 1)):
        layers.append(Basic(cin, cout, stride))
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return nn.Sequential(*layers)


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)
