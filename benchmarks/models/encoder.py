"""BERT-style transformer encoder, written out: token and position embeddings, 4 post-norm layers of width 256
with 8 heads and bidirectional attention under a padding mask, a masked-LM head over 4096 tokens; 96 tokens
(benchmark family: transformer encoder)."""

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, SEQ, DIM, HEADS, LAYERS = 4096, 96, 256, 8, 4


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.out = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
        self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.ff1, self.ff2 = nn.Linear(DIM, 4 * DIM), nn.Linear(4 * DIM, DIM)

    def forward(self, x, mask):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = self.ln1(x + F.dropout(self.out(a.transpose(1, 2).reshape(b, s, d)), 0.1, self.training))
        return self.ln2(x + F.dropout(self.ff2(F.gelu(self.ff1(x))), 0.1, self.training))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, DIM), nn.Embedding(SEQ, DIM)
        self.ln = nn.LayerNorm(DIM)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, tokens, mask):
        x = self.ln(self.tok(tokens) + self.pos(torch.arange(tokens.shape[1], device=tokens.device)))
        keep = mask[:, None, None, :]  # padding positions are never attended to
        for layer in self.layers:
            x = layer(x, keep)
        return self.head(x)


def build_model():
    return Encoder()


def example_batch(batch_size):
    tokens = torch.randint(0, VOCAB, (batch_size, SEQ))
    mask = torch.arange(SEQ)[None, :] < SEQ - 16  # the last 16 positions are padding
    return tokens, mask.expand(batch_size, SEQ).contiguous(), torch.randint(0, VOCAB, (batch_size, SEQ))


def training_step(model, batch):
    tokens, mask, labels = batch
    logits = model(tokens, mask)
    return F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1))
