"""Transformer-XL "base" on WikiText-103 (Dai et al. 2019, "Transformer-XL: Attentive Language Models Beyond a
Fixed-Length Context"), as NVIDIA DeepLearningExamples trains it: 16 layers, d_model 512, 8 heads of 64, inner 2048,
segments of 192 tokens (tgt_len) attending over themselves and a 192-token memory of the previous segment (mem_len).

Per layer (post-norm): one bias-free projection to q, k, v over the 384 memory + segment positions, a bias-free
projection of the sinusoidal relative positions (r_net), attention scores AC + BD with the two learned biases
shared by all layers (u, v of the paper) and the relative shift of BD, a causal mask, softmax, the weighted sum of
values, a bias-free output projection, then a ReLU MLP 512 -> 2048 -> 512; dropout 0.1 (none on the attention
probabilities). Word embeddings (267,735 words, scaled by sqrt(512)) are tied to the adaptive softmax (cutoffs
19997, 39997, 199997, div_val 1, no projections): every token gets the head's 19,997 words + 3 cluster logits;
only the tokens whose target falls in a tail cluster get that cluster's logits (20,000, 160,000 and 67,738 words).
Parameters: embedding 137,080,320 + 16 layers x 3,412,480 + shared biases 1,024 + output bias 267,735 + cluster
logits 1,539 = 191,950,298 (derived from DeepLearningExamples' wt103_base.yaml; its README changes the paper's base,
whose 151 M has d_model 410).

Why these shapes: the measured rows report target tokens per second (192 per sequence per step). Which cluster a
target falls in depends on the data; WikiText-103's frequencies are not published with the benchmark, so the tail
shares here follow Zipf's law (s = 1) over the 267,735 ranks: 80.2 % head, 5.3 %, 12.3 % and 2.2 % in the tails.
That is an assumption: real text is steeper than s = 1 at high ranks, so the tails may be smaller. The tail clusters
are about 12 % of the step's FLOPs (the whole softmax about 23 %); if they held half as many tokens, the step would
be about 6 % cheaper. The memory is part
of the batch (a detached [layers + 1, batch, 192, 512] tensor, as the previous step leaves it). Batch 32 per device:
the DeepLearningExamples A100 table.
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH_SIZE = 32
VOCAB, LAYERS, DIM, HEADS, HEAD_DIM, INNER, TGT, MEM, DROPOUT = 267_735, 16, 512, 8, 64, 2048, 192, 192, 0.1
CUTOFFS = (0, 19_997, 39_997, 199_997, VOCAB)
TAIL_SHARE = (0.053, 0.123, 0.022)  # Zipf (s = 1) shares of tokens in the three tail clusters, see the docstring


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * HEADS * HEAD_DIM, bias=False)
        self.r_net = nn.Linear(DIM, HEADS * HEAD_DIM, bias=False)
        self.o_net = nn.Linear(HEADS * HEAD_DIM, DIM, bias=False)
        self.attn_norm = nn.LayerNorm(DIM)
        self.ff1, self.ff2 = nn.Linear(DIM, INNER), nn.Linear(INNER, DIM)
        self.ff_norm = nn.LayerNorm(DIM)

    def forward(self, x, mem, pos, r_w_bias, r_r_bias, mask):
        b, q, _ = x.shape
        k = q + mem.shape[1]
        heads = self.qkv(torch.cat((mem, x), dim=1)).view(b, k, 3, HEADS, HEAD_DIM)
        wq, wk, wv = heads[:, -q:, 0], heads[:, :, 1], heads[:, :, 2]  # [b, q|k, h, d]
        r = self.r_net(pos).view(k, HEADS, HEAD_DIM)
        # biases and probabilities follow the activations' dtype (the measured apex O2 run keeps all of them in fp16)
        ac = torch.einsum("bihd,bjhd->bhij", wq + r_w_bias.to(wq.dtype), wk)
        bd = torch.einsum("bihd,jhd->bhij", wq + r_r_bias.to(wq.dtype), r.to(wq.dtype))
        # relative shift: pad one zero column, fold, drop the first row, unfold
        bd = F.pad(bd, (1, 0)).view(b, HEADS, k + 1, q)[:, :, 1:].reshape(b, HEADS, q, k)
        scores = ((ac + bd) * HEAD_DIM**-0.5).masked_fill(mask, float("-inf"))
        a = torch.einsum("bhij,bjhd->bihd", F.softmax(scores, dim=-1).to(wv.dtype), wv).reshape(b, q, HEADS * HEAD_DIM)
        x = self.attn_norm(x + F.dropout(self.o_net(a), DROPOUT, self.training))
        y = self.ff2(F.dropout(F.relu(self.ff1(x)), DROPOUT, self.training))
        return self.ff_norm(x + F.dropout(y, DROPOUT, self.training))


class TransformerXL(nn.Module):
    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(VOCAB, DIM)
        self.r_w_bias = nn.Parameter(torch.zeros(HEADS, HEAD_DIM))
        self.r_r_bias = nn.Parameter(torch.zeros(HEADS, HEAD_DIM))
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.out_bias = nn.Parameter(torch.zeros(VOCAB))  # the output weights are the word embedding (tied)
        self.cluster_weight = nn.Parameter(torch.zeros(len(CUTOFFS) - 2, DIM))
        self.cluster_bias = nn.Parameter(torch.zeros(len(CUTOFFS) - 2))

    def hidden(self, tokens, mems):
        b, q = tokens.shape
        k = q + MEM
        x = F.dropout(self.word(tokens) * DIM**0.5, DROPOUT, self.training)
        # sinusoidal embedding of the relative distances k-1 .. 0
        dist = torch.arange(k - 1, -1, -1.0, device=tokens.device)
        inv_freq = 1 / (10000 ** (torch.arange(0.0, DIM, 2.0, device=tokens.device) / DIM))
        angles = dist[:, None] * inv_freq[None, :]
        pos = F.dropout(torch.cat((angles.sin(), angles.cos()), dim=-1), DROPOUT, self.training)
        mask = torch.ones(q, k, dtype=torch.bool, device=tokens.device).triu(1 + MEM)
        for i, layer in enumerate(self.layers):
            x = layer(x, mems[i], pos, self.r_w_bias, self.r_r_bias, mask)
        return F.dropout(x, DROPOUT, self.training).reshape(b * q, DIM)

    def loss(self, h, targets):
        """Adaptive softmax: the head for every token, each tail cluster for its fixed share of the tokens."""
        n, weight = h.shape[0], self.word.weight
        head_w = torch.cat((weight[: CUTOFFS[1]], self.cluster_weight))
        head_b = torch.cat((self.out_bias[: CUTOFFS[1]], self.cluster_bias))
        head = F.log_softmax(F.linear(h, head_w, head_b).float(), dim=-1)
        counts = [round(share * n) for share in TAIL_SHARE]
        start, nll = n - sum(counts), []
        head_rows = torch.arange(start, device=h.device)
        nll.append(-head.index_select(0, head_rows).gather(1, targets[:start, None].clamp(max=CUTOFFS[1] - 1)))
        for i, count in enumerate(counts):
            rows = torch.arange(start, start + count, device=h.device)
            lo, hi = CUTOFFS[i + 1], CUTOFFS[i + 2]
            tail = F.log_softmax(F.linear(h.index_select(0, rows), weight[lo:hi], self.out_bias[lo:hi]).float(), dim=-1)
            picked = tail.gather(1, (targets[start : start + count, None] - lo).clamp(0, hi - lo - 1))
            nll.append(-(head.index_select(0, rows)[:, -1 - i : head.shape[1] - i] + picked))
            start += count
        return torch.cat(nll).mean()


def build_model():
    return TransformerXL()


def example_batch(batch_size):
    tokens = torch.randint(0, VOCAB, (batch_size, TGT))
    targets = torch.randint(0, VOCAB, (batch_size, TGT))
    mems = torch.randn(LAYERS + 1, batch_size, MEM, DIM)  # hidden states the previous segment left (no gradient)
    return tokens, targets, mems


def training_step(model, batch):
    tokens, targets, mems = batch
    return model.loss(model.hidden(tokens, mems), targets.reshape(-1))


def make_optimizer(parameters):
    # DeepLearningExamples trains the base model with (TorchScript) LAMB, which torch does not ship; Adam has the same
    # per-parameter state and a similar elementwise cost (LAMB adds two norms per tensor)
    return torch.optim.Adam(parameters, lr=0.01)
