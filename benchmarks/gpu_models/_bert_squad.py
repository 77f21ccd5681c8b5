"""A BERT encoder with a SQuAD span head, as NVIDIA DeepLearningExamples' BertForQuestionAnswering runs it; shared
by bert_large_squad.py and bert_base_squad.py.

Post-norm layers (Devlin et al. 2019): self-attention written out as the measured code computes it (two batched
matmuls around a scaled, masked softmax with dropout 0.1 on the probabilities, no fused attention kernel), GELU MLP
4x wide, dropout 0.1 after the embeddings and after each sublayer's output projection. Embeddings: words (vocabulary
30522 padded to 30528, a multiple of 8, as run_squad.py pads it), 512 learned positions, 2 token types, layer norm.
The pooler (dense + tanh on the first token) exists and runs, as in DeepLearningExamples' BertModel, although the
span head does not use it. The span head is a hidden -> 2 linear layer giving start and end logits per position;
the loss is the mean of the start and end cross-entropies over the sequence positions.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, MAX_POS, TYPES, DROPOUT = 30528, 512, 2, 0.1


class Layer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.attn_out = nn.Linear(dim, dim)
        self.attn_norm = nn.LayerNorm(dim, eps=1e-12)
        self.intermediate = nn.Linear(dim, 4 * dim)
        self.output = nn.Linear(4 * dim, dim)
        self.out_norm = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x, mask):
        b, s, d = x.shape
        h = self.heads

        def split(t):
            return t.view(b, s, h, d // h).transpose(1, 2).reshape(b * h, s, d // h)

        scores = torch.bmm(split(self.query(x)), split(self.key(x)).transpose(1, 2)).view(b, h, s, s)
        probs = F.dropout(F.softmax(scores / math.sqrt(d // h) + mask, dim=-1), DROPOUT, self.training)
        a = torch.bmm(probs.view(b * h, s, s), split(self.value(x)))
        a = a.view(b, h, s, d // h).transpose(1, 2).reshape(b, s, d)
        x = self.attn_norm(x + F.dropout(self.attn_out(a), DROPOUT, self.training))
        y = self.output(F.gelu(self.intermediate(x)))
        return self.out_norm(x + F.dropout(y, DROPOUT, self.training))


class BertForQA(nn.Module):
    def __init__(self, dim, layers, heads):
        super().__init__()
        self.word = nn.Embedding(VOCAB, dim)
        self.position = nn.Embedding(MAX_POS, dim)
        self.token_type = nn.Embedding(TYPES, dim)
        self.emb_norm = nn.LayerNorm(dim, eps=1e-12)
        self.layers = nn.ModuleList(Layer(dim, heads) for _ in range(layers))
        self.pooler = nn.Linear(dim, dim)
        self.qa_outputs = nn.Linear(dim, 2)

    def forward(self, tokens, token_types, attention_mask):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.emb_norm(self.word(tokens) + self.position(pos) + self.token_type(token_types))
        x = F.dropout(x, DROPOUT, self.training)
        # additive mask over the keys: 0 where attended, -10000 on padding (broadcast over heads and queries)
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        torch.tanh(self.pooler(x[:, 0]))  # computed and discarded, as the measured BertModel does
        start, end = self.qa_outputs(x).split(1, dim=-1)
        return start.squeeze(-1), end.squeeze(-1)


def squad_batch(batch_size, seq):
    tokens = torch.randint(0, VOCAB, (batch_size, seq))
    token_types = torch.randint(0, TYPES, (batch_size, seq))
    attention_mask = torch.ones(batch_size, seq, dtype=torch.long)
    starts, ends = torch.randint(0, seq, (batch_size,)), torch.randint(0, seq, (batch_size,))
    return tokens, token_types, attention_mask, starts, ends


def squad_step(model, batch):
    tokens, token_types, attention_mask, starts, ends = batch
    start_logits, end_logits = model(tokens, token_types, attention_mask)
    return (F.cross_entropy(start_logits.float(), starts) + F.cross_entropy(end_logits.float(), ends)) / 2
