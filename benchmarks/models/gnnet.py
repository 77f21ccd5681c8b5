"""GroupNorm-heavy CNN (diffusion-style residual blocks): GroupNorm(8) + SiLU + 3x3 convolution pairs with a
timestep embedding added per block, 64 channels at 32x32 and 128 at 16x16, denoising MSE loss
(benchmark family: GroupNorm CNN)."""

import torch
import torch.nn.functional as F
from torch import nn


class ResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(8, c), nn.Conv2d(c, c, 3, padding=1)
        self.n2, self.c2 = nn.GroupNorm(8, c), nn.Conv2d(c, c, 3, padding=1)
        self.t = nn.Linear(64, c)

    def forward(self, x, emb):
        h = self.c1(F.silu(self.n1(x))) + self.t(emb)[:, :, None, None]
        return x + self.c2(F.silu(self.n2(h)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.time = nn.Sequential(nn.Linear(1, 64), nn.SiLU(), nn.Linear(64, 64))
        self.inp = nn.Conv2d(3, 64, 3, padding=1)
        self.b1, self.b2 = ResBlock(64), ResBlock(64)
        self.down = nn.Conv2d(64, 128, 3, 2, 1)
        self.b3, self.b4 = ResBlock(128), ResBlock(128)
        self.up = nn.ConvTranspose2d(128, 64, 2, 2)
        self.out = nn.Sequential(nn.GroupNorm(8, 64), nn.SiLU(), nn.Conv2d(64, 3, 3, padding=1))

    def forward(self, x, t):
        emb = self.time(t[:, None])
        h = self.b2(self.b1(self.inp(x), emb), emb)
        d = self.b4(self.b3(self.down(h), emb), emb)
        return self.out(self.up(d) + h)


def build_model():
    return Net()


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 32, 32), torch.rand(batch_size), torch.randn(batch_size, 3, 32, 32)


def training_step(model, batch):
    x, t, noise = batch
    return F.mse_loss(model(x + noise, t), noise)
