"""Small U-Net: two down levels of conv-BN-ReLU pairs with max pooling, transposed-convolution upsampling,
skip connections by concatenation and a per-pixel 4-class head; 64x64 single-channel images
(benchmark family: U-Net)."""

import torch
import torch.nn.functional as F
from torch import nn


def pair(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
    )


class UNet(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.d1, self.d2, self.mid = pair(1, c), pair(c, 2 * c), pair(2 * c, 4 * c)
        self.u2, self.c2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, 2), pair(4 * c, 2 * c)
        self.u1, self.c1 = nn.ConvTranspose2d(2 * c, c, 2, 2), pair(2 * c, c)
        self.head = nn.Conv2d(c, 4, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(F.max_pool2d(a, 2))
        m = self.mid(F.max_pool2d(b, 2))
        b = self.c2(torch.cat([self.u2(m), b], 1))
        a = self.c1(torch.cat([self.u1(b), a], 1))
        return self.head(a)


def build_model():
    return UNet()


def example_batch(batch_size):
    return torch.randn(batch_size, 1, 64, 64), torch.randint(0, 4, (batch_size, 64, 64))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)
