"""Small encoder-decoder transformer (translation-style): 2 encoder and 2 decoder layers, width 256, 4 heads,
feed-forward 1024, source and target of 48 tokens, shared vocabulary of 4,000, teacher forcing with a causal target
mask, Adam (benchmark family: sequence-to-sequence transformer). Written on 2026-12-05, after the GEMM-layout
calibration and the replay's starting thresholds, as an unseen check: validated once, then added unchanged."""

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, LENGTH, DIM = 4000, 48, 256


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.zeros(LENGTH, DIM))
        self.core = nn.Transformer(
            d_model=DIM, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=1024,
            dropout=0.1, batch_first=True,
        )  # fmt: skip
        self.out = nn.Linear(DIM, VOCAB)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(LENGTH - 1), persistent=False)

    def forward(self, source, target_in):
        src = self.embed(source) + self.pos
        tgt = self.embed(target_in) + self.pos[: target_in.shape[1]]
        return self.out(self.core(src, tgt, tgt_mask=self.mask, tgt_is_causal=True))


def build_model():
    return Seq2Seq()


def example_batch(batch_size):
    return torch.randint(0, VOCAB, (batch_size, LENGTH)), torch.randint(0, VOCAB, (batch_size, LENGTH))


def training_step(model, batch):
    source, target = batch
    logits = model(source, target[:, :-1])
    return F.cross_entropy(logits.reshape(-1, VOCAB), target[:, 1:].reshape(-1))


def make_optimizer(parameters):
    return torch.optim.Adam(parameters, lr=3e-4)
