"""A BERT encoder with its masked-language-model head (Devlin et al. 2019), shared by bert_base.py and
bert_large.py. Post-norm layers, GELU MLP 4x wide, learned positions (512) and two token types; the MLM
head is dense + GELU + layer norm + a decoder tied to the word embedding with its own bias. There is no
pooler or next-sentence head (as Hugging Face's BertForMaskedLM). Like BertForMaskedLM, the head
computes logits for every position. The example batch labels every position; a real MLM batch labels
about 15 % and sets the rest to -100 (ignored), which changes only the cheap loss, not the matmuls."""

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, MAX_POS, TYPES = 30522, 512, 2


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

    def forward(self, x):
        b, s, d = x.shape

        def split(t):
            return t.view(b, s, self.heads, d // self.heads).transpose(1, 2)

        a = F.scaled_dot_product_attention(split(self.query(x)), split(self.key(x)), split(self.value(x)))
        x = self.attn_norm(x + self.attn_out(a.transpose(1, 2).reshape(b, s, d)))
        return self.out_norm(x + self.output(F.gelu(self.intermediate(x))))


class BertForMLM(nn.Module):
    def __init__(self, dim, layers, heads):
        super().__init__()
        self.word = nn.Embedding(VOCAB, dim)
        self.position = nn.Embedding(MAX_POS, dim)
        self.token_type = nn.Embedding(TYPES, dim)
        self.emb_norm = nn.LayerNorm(dim, eps=1e-12)
        self.layers = nn.ModuleList(Layer(dim, heads) for _ in range(layers))
        self.head_dense = nn.Linear(dim, dim)
        self.head_norm = nn.LayerNorm(dim, eps=1e-12)
        self.decoder = nn.Linear(dim, VOCAB)
        self.decoder.weight = self.word.weight  # tied

    def forward(self, tokens, token_types):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.emb_norm(self.word(tokens) + self.position(pos) + self.token_type(token_types))
        for layer in self.layers:
            x = layer(x)
        return self.decoder(self.head_norm(F.gelu(self.head_dense(x))))


def mlm_batch(batch_size, seq):
    tokens = torch.randint(0, VOCAB, (batch_size, seq))
    token_types = torch.randint(0, TYPES, (batch_size, seq))
    labels = torch.randint(0, VOCAB, (batch_size, seq))
    return tokens, token_types, labels


def mlm_step(model, batch):
    tokens, token_types, labels = batch
    logits = model(tokens, token_types)
    return F.cross_entropy(logits.reshape(-1, VOCAB).float(), labels.reshape(-1), ignore_index=-100)
