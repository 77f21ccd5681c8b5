"""GNMT v2 (Wu et al. 2016, "Google's Neural Machine Translation System"), as NVIDIA DeepLearningExamples trains it
on WMT16 English-German: the 4-layer model with the attention of the TensorFlow NMT tutorial. The layers of
gnmt.py and gnmt_wmt16.py, which differ only in their sentence lengths.

Shared 1024-wide embeddings over a 32,320-token BPE vocabulary (32,000 merges, padded to a multiple of 8, the
README's synthetic-vocabulary default). Encoder: a bidirectional LSTM layer (1024 per direction), then three LSTM
layers of 1024 (the first takes the 2048-wide bidirectional output; the last two add residual connections).
Decoder: an LSTM layer of 1024 whose output queries a normalised Bahdanau attention over the encoder output
(score = g * v/|v| . tanh(Wq q + Wk k + b), softmax over the source, context = weights x encoder output), then three
LSTM layers of 1024 that take [previous output, context] (2048 wide; residuals from the third layer), and a
1024 -> 32,320 classifier. Dropout 0.2 on the input of every LSTM layer; label-smoothed cross-entropy (0.1).
Parameters: embedding 33,095,680 + encoder 46,178,304 + decoder LSTMs 46,170,112 + attention 2,099,201 +
classifier 33,128,000 = 160,671,297 (derived from the README's layer sizes; it states no count).

The batch carries source and target as one [batch, src + tgt] token tensor. `packed` source positions (at most
src) go through the bidirectional layer, as DeepLearningExamples' encoder reads a packed sequence there; its output
is padded back to src positions with zeros, as pad_packed_sequence returns it.
"""

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, DIM, DROPOUT = 32_320, 1024, 0.2


class Attention(nn.Module):
    """Normalised Bahdanau attention; every (target step, source step) pair gets a tanh over DIM units."""

    def __init__(self):
        super().__init__()
        self.linear_q = nn.Linear(DIM, DIM, bias=False)
        self.linear_k = nn.Linear(DIM, DIM, bias=False)
        self.linear_att = nn.Parameter(torch.empty(DIM).uniform_(-0.1, 0.1))
        self.normalize_scalar = nn.Parameter(torch.full((1,), DIM**-0.5))
        self.normalize_bias = nn.Parameter(torch.zeros(DIM))

    def forward(self, query, keys):
        q, k = self.linear_q(query), self.linear_k(keys)  # [b, t, d], [b, s, d]
        summed = q.unsqueeze(2) + k.unsqueeze(1) + self.normalize_bias  # [b, t, s, d]
        v = self.linear_att / self.linear_att.norm() * self.normalize_scalar
        weights = F.softmax(torch.tanh(summed).matmul(v), dim=-1)  # [b, t, s]
        return torch.bmm(weights, keys)


class GNMT(nn.Module):
    def __init__(self, src: int, tgt: int, packed: int):
        super().__init__()
        self.src, self.tgt, self.packed = src, tgt, packed
        self.embedding = nn.Embedding(VOCAB, DIM)
        self.enc = nn.ModuleList(
            [nn.LSTM(DIM, DIM, batch_first=True, bidirectional=True), nn.LSTM(2 * DIM, DIM, batch_first=True)]
            + [nn.LSTM(DIM, DIM, batch_first=True) for _ in range(2)]
        )
        self.dec_first = nn.LSTM(DIM, DIM, batch_first=True)
        self.attention = Attention()
        self.dec = nn.ModuleList(nn.LSTM(2 * DIM, DIM, batch_first=True) for _ in range(3))
        self.classifier = nn.Linear(DIM, VOCAB)

    def encode(self, src):
        x = self.embedding(src)
        for i, lstm in enumerate(self.enc):
            if i == 0 and self.packed < self.src:
                y, _ = lstm(F.dropout(x[:, : self.packed], DROPOUT, self.training))
                y = F.pad(y, (0, 0, 0, self.src - self.packed))
            else:
                y, _ = lstm(F.dropout(x, DROPOUT, self.training))
            x = x + y if i >= 2 else y
        return x

    def forward(self, tokens):
        src, tgt = tokens[:, : self.src], tokens[:, self.src :]
        keys = self.encode(src)
        x, _ = self.dec_first(F.dropout(self.embedding(tgt), DROPOUT, self.training))
        context = self.attention(x, keys)
        for i, lstm in enumerate(self.dec):
            y, _ = lstm(torch.cat((F.dropout(x, DROPOUT, self.training), context), dim=2))
            x = x + y if i >= 1 else y
        return self.classifier(x)


def entry_points(src: int, tgt: int, packed: int):
    """A model file's build_model and example_batch for pairs of `src` source and `tgt` target positions."""

    def build_model():
        return GNMT(src, tgt, packed)

    def example_batch(batch_size):
        # source and target tokens of each pair in one tensor; the labels are the target shifted by one
        return torch.randint(0, VOCAB, (batch_size, src + tgt)), torch.randint(0, VOCAB, (batch_size, tgt))

    return build_model, example_batch


def training_step(model, batch):
    tokens, labels = batch
    logits = model(tokens)
    return F.cross_entropy(logits.reshape(-1, VOCAB).float(), labels.reshape(-1), label_smoothing=0.1)


def make_optimizer(parameters):
    # DeepLearningExamples' GNMT: Adam, lr 2e-3
    return torch.optim.Adam(parameters, lr=2e-3)
