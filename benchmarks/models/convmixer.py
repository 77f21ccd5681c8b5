"""ConvMixer-style CNN on 32x32 images: a 2x2/2 patch embedding to 128 channels, then six blocks of a residual 9x9
depthwise convolution and a 1x1 pointwise one, each followed by GELU and BatchNorm, at 16x16 throughout; global
average pooling and a linear head, AdamW (benchmark family: isotropic depthwise CNN). Written on 2026-12-05, after the
depthwise calibration (3x3, 5x5, 7x7 layers; none at 9x9), as an unseen check: validated once, then added
unchanged."""

import torch
import torch.nn.functional as F
from torch import nn


class Residual(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return x + self.body(x)


def build_model(width=128, depth=6, kernel=9, patch=2):
    def act(c):
        return [nn.GELU(), nn.BatchNorm2d(c)]

    layers = [nn.Conv2d(3, width, patch, stride=patch), *act(width)]
    for _ in range(depth):
        mix = nn.Sequential(nn.Conv2d(width, width, kernel, groups=width, padding=kernel // 2), *act(width))
        layers += [Residual(mix), nn.Conv2d(width, width, 1), *act(width)]
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10)]
    return nn.Sequential(*layers)


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)


def make_optimizer(parameters):
    return torch.optim.AdamW(parameters, lr=1e-3, weight_decay=0.05)
