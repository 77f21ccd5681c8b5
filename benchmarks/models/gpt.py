"""Small GPT: 4 pre-norm causal blocks, width 256, 4 heads, 128 tokens, vocabulary 2048 (family: GPT)."""

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, SEQ, DIM, HEADS, LAYERS = 2048, 128, 256, 4, 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.qkv, self.proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
        self.fc, self.out = nn.Linear(DIM, 4 * DIM), nn.Linear(4 * DIM, DIM)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, DIM), nn.Embedding(SEQ, DIM)
        self.blocks = nn.Sequential(*[Block() for _ in range(LAYERS)])
        self.ln, self.head = nn.LayerNorm(DIM), nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
        return self.head(self.ln(self.blocks(x)))


def build_model():
    return GPT()


def example_batch(batch_size):
    return torch.randint(0, VOCAB, (batch_size, SEQ + 1))


def training_step(model, batch):
    logits = model(batch[:, :-1])
    return F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
