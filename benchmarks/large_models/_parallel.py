"""A decoder with the "parallel" block of PaLM (Chowdhery et al. 2022, section 2): one normalisation feeds both
the attention and the MLP, and their outputs are added to the residual together, y = x + Attn(N(x)) + MLP(N(x)).
Shared by palm_540b.py and the MaxText benchmark models (MaxText's 2023 default decoder has the same block).

Options: query heads and key/value heads of a given head width (which need not be width / heads: PaLM and
MaxText use 256), a gated SwiGLU MLP (three matrices) or a plain ReLU one (two), RMSNorm or bias-free LayerNorm,
an RMSNorm over each query and key head (MaxText's flash-attention path), rotary positions, and the output
head tied to the token embedding (both sources). No biases in any dense layer (both sources).

Parameters, with V vocabulary, h width, L blocks, H query heads, K key/value heads, d head width, f MLP width:
each block has Q and output 2hHd, K and V 2hKd, the MLP 3hf gated or 2hf plain, one norm h and, with QK norms,
2d; plus the token table Vh (also the head) and the final norm h.
"""

import importlib.util
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

_path = Path(__file__).resolve().parents[2] / "profiles" / "models" / "_llama.py"
_spec = importlib.util.spec_from_file_location("_llama", _path)
_llama = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_llama)
lm_batch, lm_step = _llama.lm_batch, _llama.lm_step


def _norm(dim, kind):
    return _llama.RMSNorm(dim) if kind == "rms" else nn.LayerNorm(dim, bias=False)


class ParallelBlock(nn.Module):
    def __init__(self, dim, heads, kv_heads, head_dim, ffn, gated, norm, qk_norm):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim, self.gated = heads, kv_heads, head_dim, gated
        self.norm = _norm(dim, norm)
        self.wq = nn.Linear(dim, heads * head_dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * head_dim, bias=False)
        self.wo = nn.Linear(heads * head_dim, dim, bias=False)
        self.q_norm = _llama.RMSNorm(head_dim) if qk_norm else None
        self.k_norm = _llama.RMSNorm(head_dim) if qk_norm else None
        self.wi = nn.Linear(dim, ffn, bias=False)
        self.wg = nn.Linear(dim, ffn, bias=False) if gated else None
        self.wf = nn.Linear(ffn, dim, bias=False)

    def attention(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.heads, self.head_dim)
        k = self.wk(x).view(b, s, self.kv_heads, self.head_dim)
        v = self.wv(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q = q * cos + _llama.rotate_half(q) * sin
        k = k * cos + _llama.rotate_half(k) * sin
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kv_heads != self.heads)
        return self.wo(out.transpose(1, 2).reshape(b, s, -1))

    def mlp(self, x):
        if self.gated:
            return self.wf(F.silu(self.wg(x)) * self.wi(x))
        return self.wf(F.relu(self.wi(x)))

    def forward(self, x, cos, sin):
        h = self.norm(x)
        return x + self.attention(h, cos, sin) + self.mlp(h)


class ParallelLM(nn.Module):
    def __init__(self, vocab, seq, dim, layers, heads, kv_heads, head_dim, ffn, gated, norm="rms", qk_norm=False):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            ParallelBlock(dim, heads, kv_heads, head_dim, ffn, gated, norm, qk_norm) for _ in range(layers)
        )
        self.norm = _norm(dim, norm)
        inv = 1.0 / 10000.0 ** (torch.arange(0, head_dim, 2).float() / head_dim)
        angles = torch.outer(torch.arange(seq).float(), inv)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, tokens):
        s = tokens.shape[1]
        x = self.tok_embeddings(tokens)
        cos, sin = self.cos[:s].to(x.dtype), self.sin[:s].to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return F.linear(self.norm(x), self.tok_embeddings.weight)  # output head tied to the embedding
