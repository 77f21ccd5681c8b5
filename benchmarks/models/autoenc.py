"""Dense autoencoder on 784-pixel images: 784-512-256-64-256-512-784 with tanh and dropout, mean-squared
reconstruction loss, AdamW (benchmark family: dense autoencoder). Written on 2026-12-05, after the pooling
calibration, as an unseen check: validated once, then added unchanged."""

import torch
import torch.nn.functional as F
from torch import nn


def build_model():
    sizes = (784, 512, 256, 64, 256, 512, 784)
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:], strict=False)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers += [nn.Tanh(), nn.Dropout(0.1)]
    return nn.Sequential(*layers)


def example_batch(batch_size):
    x = torch.rand(batch_size, 784)
    return x, x


def training_step(model, batch):
    x, target = batch
    return F.mse_loss(model(x), target)


def make_optimizer(parameters):
    return torch.optim.AdamW(parameters, lr=1e-3)
