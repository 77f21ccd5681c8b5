"""A GPT-style decoder (pre-LayerNorm blocks, fused QKV, GELU MLP, causal attention), shared by the GPT-family
model files in this folder: Megatron-LM's GPT (Narayanan et al. 2021; Korthikanti et al. 2022), GPT-3 175B, the
Megatron-Core H100 scaling models, MPT and BLOOM. Written from those papers' descriptions, plain torch.

Options cover the differences the sources state: a learned position table or none (BLOOM uses ALiBi, a bias
added to the attention scores with no parameters and a negligible cost, left out here), an output head tied to
the token embedding or not, a LayerNorm after the embedding (BLOOM), biases in the dense layers, and how attention
runs: one fused kernel (`sdpa`: flash attention, what Megatron-Core, NeMo and llm-foundry run) or Megatron-LM's
attention core from before flash attention (`megatron`, Narayanan et al. 2021, Korthikanti et al. 2022, BLOOM's
Megatron-DeepSpeed): a scaled baddbmm writes the [b·heads, s, s] scores, one fused scale-mask-softmax kernel
(16-bit in and out) turns them into probabilities, dropout, and a bmm with the values, so the scores cross memory
and stay saved for the backward pass (Korthikanti's 5·a·s/h term). `dropout` is Megatron-LM's --attention-dropout
and --hidden-dropout (both 0.1 by default in its arguments.py; the GPT runs of both papers keep the defaults).

Parameters, with V vocabulary, s positions, h width, L blocks and f the MLP width (4h unless stated):
each block has QKV 3h^2+3h, output h^2+h, MLP 2hf+f+h and two LayerNorms 4h, so 4h^2+2hf+9h+f
(12h^2+13h when f = 4h); plus the token table Vh, the position table sh, the final LayerNorm 2h, an embedding
LayerNorm 2h if present and an untied head Vh if not tied. Biases off removes 3h+h+f+h per block.
"""

import torch
import torch.nn.functional as F
from torch import nn


def megatron_attention(q, k, v, dropout, training):
    """Megatron-LM's CoreAttention before flash attention: q, k, v [b, heads, s, d] -> [b, heads, s, d]."""
    b, h, s, d = q.shape
    q, k, v = (t.contiguous().view(b * h, s, d) for t in (q, k, v))  # one copy each, at any batch size
    empty = torch.empty(b * h, s, s, dtype=q.dtype, device=q.device)
    scores = torch.baddbmm(empty, q, k.transpose(1, 2), beta=0.0, alpha=d**-0.5)
    probs = torch._softmax(scores, -1, False)  # the fused scale-mask-softmax kernel: 16-bit in and out
    return torch.bmm(F.dropout(probs, dropout, training), v).view(b, h, s, d)


class Block(nn.Module):
    def __init__(self, dim, heads, ffn, bias, attention="sdpa", dropout=0.0):
        super().__init__()
        self.heads, self.attention, self.dropout = heads, attention, dropout
        self.ln_1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=bias)
        self.proj = nn.Linear(dim, dim, bias=bias)
        self.ln_2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, ffn, bias=bias)
        self.out = nn.Linear(ffn, dim, bias=bias)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln_1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.attention == "megatron":
            a = megatron_attention(q, k, v, self.dropout, self.training)
        else:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.drop(self.proj(a.transpose(1, 2).reshape(b, s, d)))
        return x + self.drop(self.out(F.gelu(self.fc(self.ln_2(x)))))

    def drop(self, x):
        return F.dropout(x, self.dropout, self.training) if self.dropout else x


class GPT(nn.Module):
    def __init__(
        self, vocab, seq, dim, layers, heads, ffn=None, tied=True, positions=True, embed_norm=False, bias=True,
        attention="sdpa", dropout=0.0,
    ):  # fmt: skip
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(seq, dim) if positions else None
        self.ln_e = nn.LayerNorm(dim) if embed_norm else None
        self.h = nn.ModuleList(Block(dim, heads, ffn or 4 * dim, bias, attention, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        if tied:
            self.lm_head.weight = self.wte.weight

    def forward(self, tokens):
        x = self.wte(tokens)
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))
        if self.ln_e is not None:
            x = self.ln_e(x)
        for blk in self.h:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


def lm_batch(batch_size, seq, vocab):
    """Token ids and next-token labels, as a language-model data loader gives them."""
    return torch.randint(0, vocab, (batch_size, seq)), torch.randint(0, vocab, (batch_size, seq))


def lm_step(model, batch):
    tokens, labels = batch
    logits = model(tokens)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1))
