"""DenseNet-BC for 32x32 images (benchmark family: densely connected CNN, growth rate 12): each layer a BatchNorm-
ReLU-1x1 bottleneck to 48 channels and a BatchNorm-ReLU-3x3 conv to 12 new ones, concatenated onto its input; three
blocks of six layers with halving 1x1 transitions between them. Its channel counts (24, 36, 60, 108, 12 ...) are
mostly not multiples of 16, unlike every other family here."""

import torch
import torch.nn.functional as F
from torch import nn

GROWTH = 12


class Layer(nn.Module):
    def __init__(self, cin):
        super().__init__()
        self.n1, self.c1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, 4 * GROWTH, 1, bias=False)
        self.n2, self.c2 = nn.BatchNorm2d(4 * GROWTH), nn.Conv2d(4 * GROWTH, GROWTH, 3, padding=1, bias=False)

    def forward(self, x):
        y = self.c1(F.relu(self.n1(x)))
        return torch.cat([x, self.c2(F.relu(self.n2(y)))], 1)


def build_model():
    layers, c = [nn.Conv2d(3, 2 * GROWTH, 3, padding=1, bias=False)], 2 * GROWTH
    for block in range(3):
        for _ in range(6):
            layers.append(Layer(c))
            c += GROWTH
        if block < 2:  # transition: BatchNorm-ReLU-1x1 to half the channels, 2x2 average pooling
            layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2)]
            c //= 2
    layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10)]
    return nn.Sequential(*layers)


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)
