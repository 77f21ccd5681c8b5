"""MLP-Mixer for 32x32 images (benchmark family: all-MLP vision model): 4x4 patches embedded to 96 channels (64
tokens), four blocks of a token-mixing MLP (64 -> 128 -> 64 across the tokens, on the transposed activations) and a
channel-mixing MLP (96 -> 384 -> 96), each behind a LayerNorm with a residual connection, GELU activations."""

import torch
import torch.nn.functional as F
from torch import nn


class MixerBlock(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.n1 = nn.LayerNorm(dim)
        self.tokens = nn.Sequential(nn.Linear(tokens, 128), nn.GELU(), nn.Linear(128, tokens))
        self.n2 = nn.LayerNorm(dim)
        self.channels = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.tokens(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channels(self.n2(x))


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 96, 4, 4)
        self.blocks = nn.Sequential(*[MixerBlock(64, 96) for _ in range(4)])
        self.norm = nn.LayerNorm(96)
        self.head = nn.Linear(96, 10)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(1))


def build_model():
    return Mixer()


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)
