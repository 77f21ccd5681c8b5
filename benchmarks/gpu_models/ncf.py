"""NCF / NeuMF (He et al. 2017, "Neural Collaborative Filtering") on MovieLens-20M, as NVIDIA DeepLearningExamples
trains it (implicit feedback: each sample is one (user, item) pair, positive or sampled negative).

Two branches over 138,493 users and 26,744 items (the ML-20M cardinalities in DeepLearningExamples'
data/ml-20m/feature_spec_template.yaml): GMF, the elementwise product of 64-wide user and item embeddings; and an
MLP over the concatenated 128-wide user and item embeddings, layers 256 -> 256 -> 128 -> 64 with ReLU and dropout 0.5
(ncf.py's defaults: factors 64, layers [256, 256, 128, 64]). The 64 + 64 outputs are concatenated into a single
logit; the loss is binary cross-entropy with logits. Embedding gradients are dense (nn.Embedding's default), as in
the measured code, so the optimizer updates all 31.8 M parameters every step.
Parameters: embeddings (138,493 + 26,744) x (64 + 128) = 31,725,504; MLP 256*256+256 + 256*128+128 + 128*64+64 =
106,944; final (64+64)+1 = 129; total 31,832,577 (derived from the published layer sizes; NCF papers give no count).

Why these shapes: the measured rows run DeepLearningExamples' ncf.py on ML-20M with 4 negatives per positive,
counting positives and negatives as samples. Batch 1,048,576 (2^20) per device: its default on one GPU.

What the rows count: ncf.py divides each worker's share of the epoch into batches with torch.split, drops the last
(partial) one (dataloading.py: "the last batch will almost certainly be smaller, drop it"), and reports the whole
epoch's samples over the epoch's time. An epoch is ML-20M's 20,000,263 ratings less each of the 138,493 users' last
one (held out for the test: convert.py), 19,861,770 positives, with 4 negatives each: EPOCH_SAMPLES = 99,308,850.
At Lambda's batch of 10,000,000 a GPU trains 9 batches (90,000,000 samples) and counts 99,308,850, 1.103 times as
many; at DeepLearningExamples' 2^20, 94 batches and 1.0075 times. benchmarks/published.py converts by that ratio.
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH_SIZE = 2**20
USERS, ITEMS, FACTORS, MLP = 138_493, 26_744, 64, (256, 256, 128, 64)
EPOCH_SAMPLES = (20_000_263 - 138_493) * (1 + 4)  # training positives and 4 negatives each, per epoch


class NeuMF(nn.Module):
    def __init__(self):
        super().__init__()
        self.mf_user, self.mf_item = nn.Embedding(USERS, FACTORS), nn.Embedding(ITEMS, FACTORS)
        self.mlp_user, self.mlp_item = nn.Embedding(USERS, MLP[0] // 2), nn.Embedding(ITEMS, MLP[0] // 2)
        self.mlp = nn.ModuleList(nn.Linear(a, b) for a, b in zip(MLP[:-1], MLP[1:], strict=True))
        self.final = nn.Linear(MLP[-1] + FACTORS, 1)

    def forward(self, users, items):
        mf = self.mf_user(users) * self.mf_item(items)
        x = torch.cat((self.mlp_user(users), self.mlp_item(items)), dim=1)
        for layer in self.mlp:
            x = F.dropout(F.relu(layer(x)), 0.5, self.training)
        return self.final(torch.cat((mf, x), dim=1))


def build_model():
    return NeuMF()


def example_batch(batch_size):
    users = torch.randint(0, USERS, (batch_size,))
    items = torch.randint(0, ITEMS, (batch_size,))
    return users, items, torch.randint(0, 2, (batch_size, 1)).float()


def training_step(model, batch):
    users, items, labels = batch
    return F.binary_cross_entropy_with_logits(model(users, items).float(), labels)


def make_optimizer(parameters):
    # ncf.py: (apex Fused) Adam, lr 0.0045, betas (0.25, 0.5), eps 1e-8
    return torch.optim.Adam(parameters, lr=0.0045, betas=(0.25, 0.5), eps=1e-8)
