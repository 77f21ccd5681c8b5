"""Embedding lookups, one plain and one bag of 4 per sample, into a linear head: the smallest model whose backward
runs embedding gradients (aten.embedding_dense_backward, aten._embedding_bag_backward)."""

import torch
from torch import nn


class TinyRecsys(nn.Module):
    def __init__(self):
        super().__init__()
        self.users = nn.Embedding(1000, 16)
        self.items = nn.EmbeddingBag(500, 16, mode="sum")
        self.head = nn.Linear(32, 1)

    def forward(self, batch):
        users, items = batch[:, 0], batch[:, 1:]
        return self.head(torch.cat((self.users(users), self.items(items)), dim=1))


def build_model():
    return TinyRecsys()


def example_batch(batch_size):
    # one user and a bag of 4 items per sample
    return torch.randint(0, 500, (batch_size, 5))
