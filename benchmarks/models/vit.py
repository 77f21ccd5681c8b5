"""Small ViT: 4x4 patches of 32x32 images (64 tokens + class token), 4 encoder layers of width 192,
3 heads, built from nn.TransformerEncoderLayer (benchmark family: ViT)."""

import torch
import torch.nn.functional as F
from torch import nn

DIM, LAYERS, HEADS, PATCH = 192, 4, 3, 4


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, DIM, PATCH, PATCH)
        self.cls = nn.Parameter(torch.zeros(1, 1, DIM))
        self.pos = nn.Parameter(torch.zeros(1, (32 // PATCH) ** 2 + 1, DIM))
        layer = nn.TransformerEncoderLayer(
            DIM, HEADS, 4 * DIM, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.norm, self.head = nn.LayerNorm(DIM), nn.Linear(DIM, 10)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


def build_model():
    return ViT()


def example_batch(batch_size):
    return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))


def training_step(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)
