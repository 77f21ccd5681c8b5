"""ConvNeXt-style CNN on 32x32 images: a 2x2/2 patch stem, blocks of a 7x7 depthwise convolution, LayerNorm over
channels and a 4x pointwise MLP (GELU) with a residual, 2x2/2 downsampling between stages of 48-96-192 channels,
AdamW (benchmark family: modern CNN). Written on 2026-12-05, after the GEMM-layout calibration and the replay's
starting thresholds, as an unseen check: validated once, then added unchanged."""

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)  # N, H, W, C
        y = self.down(F.gelu(self.up(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


class Down(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm = nn.LayerNorm(cin)
        self.conv = nn.Conv2d(cin, cout, 2, stride=2)

    def forward(self, x):
        return self.conv(self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2))


def build_model():
    dims = (48, 96, 192)
    layers = [nn.Conv2d(3, dims[0], 2, stride=2)]
    for i, d in enumerate(dims):
        if i:
            layers.append(Down(dims[i - 1], d))
        layers += [Block(d), Block(d)]
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(dims[-1]), nn.Linear(dims[-1], 10)]
    return nn.Sequential(*layers)


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)


def make_optimizer(parameters):
    return torch.optim.AdamW(parameters, lr=1e-3, weight_decay=0.05)
