"""Plain CNN (VGG-style): 3x3 convolutions with ReLU and max pooling, no normalisation, a two-layer head; 32x32
images, SGD with momentum (benchmark family: plain CNN)."""

import torch
import torch.nn.functional as F
from torch import nn


def build_model():
    layers, cin = [], 3
    for cout in (32, 32, "pool", 64, 64, "pool", 128, "pool"):
        if cout == "pool":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU()]
            cin = cout
    layers += [nn.Flatten(), nn.Linear(128 * 4 * 4, 256), nn.ReLU(), nn.Linear(256, 10)]
    return nn.Sequential(*layers)


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)


def make_optimizer(parameters):
    return torch.optim.SGD(parameters, lr=0.01, momentum=0.9)
