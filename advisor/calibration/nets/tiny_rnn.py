"""Calibration net: a tiny Elman RNN (tanh) over 24 steps and a linear head. One Python call runs about a
hundred small aten ops in C++, so its fixed cost per op separates the dispatch of an op from the Python of
a module call (the other tiny nets run about one op per module). `advisor calibrate` times its phases."""

import torch
from torch import nn

WIDTH, STEPS = 16, 24


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(WIDTH, WIDTH, batch_first=True)
        self.head = nn.Linear(WIDTH, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def build_model():
    return Net()


def example_batch(batch_size):
    return torch.randn(batch_size, STEPS, WIDTH)
