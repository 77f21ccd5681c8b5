"""GPT-2 124M (Radford et al. 2019, "Language Models are Unsupervised Multitask Learners"), the smallest size.

12 pre-norm layers, 768 wide, 12 heads, MLP 3072 with tanh-GELU, learned positions for a 1024-token
context, vocab 50257, output head tied to the token embedding. Causal attention runs through
scaled_dot_product_attention(is_causal=True). 124,439,808 parameters (the tied head counted once).

Batch 12 sequences of 1024 tokens per device: nanoGPT's GPT-2 (124M) recipe (micro-batch 12 on 8 GPUs with
gradient accumulation to about 0.5M tokens per step).
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH_SIZE = 12
# The training recipe's samples per optimizer step over all devices (advisor trains every configuration at it).
GLOBAL_BATCH = 512
GLOBAL_BATCH_SOURCE = (
    "about 0.5M tokens per step: GPT-3 paper Table 2.1 (125M: 0.5M tokens) and llm.c's GPT-2 124M "
    "reproduction (524,288 tokens = 512 x 1024); nanoGPT uses 480 x 1024"
)
VOCAB, SEQ, DIM, LAYERS, HEADS = 50257, 1024, 768, 12, 12


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(DIM)
        self.c_attn = nn.Linear(DIM, 3 * DIM)
        self.attn_proj = nn.Linear(DIM, DIM)
        self.ln_2 = nn.LayerNorm(DIM)
        self.c_fc = nn.Linear(DIM, 4 * DIM)
        self.mlp_proj = nn.Linear(4 * DIM, DIM)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).view(b, s, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, DIM)
        self.wpe = nn.Embedding(SEQ, DIM)
        self.h = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)
        for blk in self.h:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


def build_model():
    return GPT2()


def example_batch(batch_size):
    return torch.randint(0, VOCAB, (batch_size, SEQ)), torch.randint(0, VOCAB, (batch_size, SEQ))


def training_step(model, batch):
    tokens, labels = batch
    logits = model(tokens)
    return F.cross_entropy(logits.reshape(-1, VOCAB).float(), labels.reshape(-1))
