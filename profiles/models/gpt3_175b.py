"""GPT-3 175B (Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1): 96 pre-norm layers, 12288
wide, 96 heads of 128, MLP 4 × 12288 with GELU, learned positions for a 2048-token context, the GPT-2 vocabulary of
50257, output head tied to the token embedding. Dense attention in every layer (the paper alternates dense and
locally banded sparse attention; the dense form is what Megatron-LM and NeMo train and report).

174,604,259,328 parameters: V·h + 2048·h + L·(12h² + 13h) + 2h, the tied head counted once (the paper: 175.0B).
Batch 1 sequence per device: the micro-batch Megatron-LM runs GPT-3 with under TP 8 × PP 8 (Korthikanti et al.
2022, Table 3); the paper's 3.2M-token batch comes from data parallelism and the pipeline's micro-batches.
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH_SIZE = 1
# The training recipe's samples per optimizer step over all devices (advisor trains every configuration at it).
GLOBAL_BATCH = 1536
GLOBAL_BATCH_SOURCE = (
    "GPT-3 paper (Brown et al. 2020, Table 2.1): 3.2M tokens per step for the 175B = 1536 sequences of 2048"
)
VOCAB, SEQ, DIM, LAYERS, HEADS = 50257, 2048, 12288, 96, 96


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.ln_2 = nn.LayerNorm(DIM)
        self.fc = nn.Linear(DIM, 4 * DIM)
        self.out = nn.Linear(4 * DIM, DIM)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln_1(x)).view(b, s, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.out(F.gelu(self.fc(self.ln_2(x))))


class GPT3(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, DIM)
        self.wpe = nn.Embedding(SEQ, DIM)
        self.h = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))
        for blk in self.h:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


def build_model():
    return GPT3()


def example_batch(batch_size):
    return torch.randint(0, VOCAB, (batch_size, SEQ)), torch.randint(0, VOCAB, (batch_size, SEQ))


def training_step(model, batch):
    tokens, labels = batch
    logits = model(tokens)
    return F.cross_entropy(logits.reshape(-1, VOCAB).float(), labels.reshape(-1))
