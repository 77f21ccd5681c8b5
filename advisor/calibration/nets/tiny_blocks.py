"""Calibration net: residual MLP blocks with LayerNorm and GELU, widths so small that every op costs
about its fixed eager overhead. `advisor calibrate` times its phases to measure that overhead."""

import torch
from torch import nn

WIDTH, DEPTH = 16, 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.up = nn.Linear(WIDTH, 2 * WIDTH)
        self.down = nn.Linear(2 * WIDTH, WIDTH)

    def forward(self, x):
        return x + self.down(nn.functional.gelu(self.up(self.norm(x))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range(DEPTH)])
        self.head = nn.Linear(WIDTH, 1)

    def forward(self, x):
        return self.head(self.blocks(x))


def build_model():
    return Net()


def example_batch(batch_size):
    return torch.randn(batch_size, WIDTH)
