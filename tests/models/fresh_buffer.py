"""A tiny MLP whose every step also allocates a fresh 48 MiB tensor: above glibc's 32 MiB ceiling for reusing
freed blocks, so the OS hands it out (and the step faults it in) anew each time."""

import torch
from torch import nn

WORDS = 12 * 1024 * 1024  # 12 Mi fp32 values = 48 MiB


class WithBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        scratch = torch.ones(WORDS)  # every page written: faulted in
        return self.mlp(x) + scratch[:4] * 0


def build_model():
    return WithBuffer()


def example_batch(batch_size):
    return torch.randn(batch_size, 16)
