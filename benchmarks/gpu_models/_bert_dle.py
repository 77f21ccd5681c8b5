"""BERT (Devlin et al. 2019) as NVIDIA DeepLearningExamples' modeling.py runs it; shared by bert_large_pretrain.py,
bert_large_squad.py and bert_base_squad.py.

Post-norm layers: self-attention written out as the measured code computes it (two batched matmuls around a scaled,
masked softmax with dropout 0.1 on the probabilities, no fused attention kernel), GELU MLP 4x wide, dropout 0.1
after the embeddings and after each sublayer's output projection. Embeddings: words (vocabulary 30522 padded to
30528, a multiple of 8, as run_pretraining.py and run_squad.py pad it), 512 learned positions, 2 token types, layer
norm. The pooler (dense + tanh on the first token) always runs, as in DeepLearningExamples' BertModel.
Heads: SQuAD's span head (hidden -> 2: start and end logits per position; loss the mean of the two cross-entropies)
and pre-training's heads (masked-LM transform dense + GELU + layer norm, a decoder tied to the word embedding with
its own bias, applied only to the masked positions gathered from the sequence as the measured run does by default;
next-sentence prediction, hidden -> 2 on the pooled output).
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


class Encoder(nn.Module):
    def __init__(self, dim, layers, heads):
        super().__init__()
        self.word = nn.Embedding(VOCAB, dim)
        self.position = nn.Embedding(MAX_POS, dim)
        self.token_type = nn.Embedding(TYPES, dim)
        self.emb_norm = nn.LayerNorm(dim, eps=1e-12)
        self.layers = nn.ModuleList(Layer(dim, heads) for _ in range(layers))
        self.pooler = nn.Linear(dim, dim)

    def encode(self, tokens, token_types, attention_mask):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.emb_norm(self.word(tokens) + self.position(pos) + self.token_type(token_types))
        x = F.dropout(x, DROPOUT, self.training)
        # additive mask over the keys: 0 where attended, -10000 on padding (broadcast over heads and queries)
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


class BertForQA(Encoder):
    def __init__(self, dim, layers, heads):
        super().__init__(dim, layers, heads)
        self.qa_outputs = nn.Linear(dim, 2)

    def forward(self, tokens, token_types, attention_mask):
        x, _ = self.encode(tokens, token_types, attention_mask)  # the pooled output is computed and unused
        start, end = self.qa_outputs(x).split(1, dim=-1)
        return start.squeeze(-1), end.squeeze(-1)


class BertForPreTraining(Encoder):
    def __init__(self, dim, layers, heads):
        super().__init__(dim, layers, heads)
        self.head_dense = nn.Linear(dim, dim)
        self.head_norm = nn.LayerNorm(dim, eps=1e-12)
        self.decoder_bias = nn.Parameter(torch.zeros(VOCAB))  # the decoder's weight is the word embedding
        self.nsp = nn.Linear(dim, 2)

    def forward(self, tokens, token_types, attention_mask, masked_positions):
        x, pooled = self.encode(tokens, token_types, attention_mask)
        b, s, d = x.shape
        # gather the masked positions of every sequence (flattened), as the measured dense_seq_output path does
        rows = (masked_positions + s * torch.arange(b, device=x.device)[:, None]).reshape(-1)
        picked = x.reshape(b * s, d).index_select(0, rows)
        mlm = F.linear(self.head_norm(F.gelu(self.head_dense(picked))), self.word.weight, self.decoder_bias)
        return mlm, self.nsp(pooled)


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


def pretrain_batch(batch_size, seq, predictions):
    tokens = torch.randint(0, VOCAB, (batch_size, seq))
    token_types = torch.randint(0, TYPES, (batch_size, seq))
    attention_mask = torch.ones(batch_size, seq, dtype=torch.long)
    masked_positions = torch.randint(0, seq, (batch_size, predictions))
    mlm_labels = torch.randint(0, VOCAB, (batch_size * predictions,))
    nsp_labels = torch.randint(0, 2, (batch_size,))
    return tokens, token_types, attention_mask, masked_positions, mlm_labels, nsp_labels


def pretrain_step(model, batch):
    tokens, token_types, attention_mask, masked_positions, mlm_labels, nsp_labels = batch
    mlm, nsp = model(tokens, token_types, attention_mask, masked_positions)
    return F.cross_entropy(mlm.float(), mlm_labels) + F.cross_entropy(nsp.float(), nsp_labels)
