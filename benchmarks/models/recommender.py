"""DLRM-style recommender: 8 sparse features looked up in embedding-bag tables (50,000 rows of 32), a bottom MLP
on 13 dense features, pairwise dot-product interactions and a top MLP, binary cross-entropy, SGD
(benchmark family: embedding-heavy recommender)."""

import torch
import torch.nn.functional as F
from torch import nn

TABLES, ROWS, DIM, DENSE, LOOKUPS = 8, 50_000, 32, 13, 4


def mlp(*widths):
    layers = []
    for a, b in zip(widths, widths[1:], strict=False):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class DLRM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tables = nn.ModuleList(nn.EmbeddingBag(ROWS, DIM, mode="sum") for _ in range(TABLES))
        self.bottom = mlp(DENSE, 128, 64, DIM)
        pairs = (TABLES + 1) * TABLES // 2
        self.top = mlp(DIM + pairs, 256, 128, 1)

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        feats = torch.stack([x] + [t(sparse[:, i]) for i, t in enumerate(self.tables)], 1)
        dots = torch.bmm(feats, feats.transpose(1, 2))
        i, j = torch.triu_indices(TABLES + 1, TABLES + 1, 1, device=dense.device)
        return self.top(torch.cat([x, dots[:, i, j]], 1)).squeeze(1)


def build_model():
    return DLRM()


def example_batch(batch_size):
    dense = torch.randn(batch_size, DENSE)
    sparse = torch.randint(0, ROWS, (batch_size, TABLES, LOOKUPS))
    return dense, sparse, torch.randint(0, 2, (batch_size,)).float()


def training_step(model, batch):
    dense, sparse, label = batch
    return F.binary_cross_entropy_with_logits(model(dense, sparse), label)


def make_optimizer(parameters):
    return torch.optim.SGD(parameters, lr=0.05)
