"""ViT-B/16 (Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words"), 224x224, 1000 classes.

16x16 patches (196 of them) embedded by a 16x16/16 conv to 768, a class token and learned position
embeddings (197 positions), 12 pre-norm encoder layers (12 heads of 64, MLP 3072 with GELU), a final layer
norm and a 768 -> 1000 head on the class token. Attention runs through scaled_dot_product_attention
(not causal). 86,567,656 parameters (as torchvision's vit_b_16); about 17.6 GMAC forward per image.

Batch 128 per device: DeiT's recipe (batch 1024 on 8 GPUs).
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH_SIZE = 128
# The training recipe's samples per optimizer step over all devices (advisor trains every configuration at it).
GLOBAL_BATCH = 4096
GLOBAL_BATCH_SOURCE = (
    "Dosovitskiy et al. 2021 (arXiv:2010.11929): batch 4096 for every ViT; DeiT's ImageNet-1k recipe uses 1024"
)
IMAGE, PATCH, DIM, LAYERS, HEADS, MLP, CLASSES = 224, 16, 768, 12, 12, 3072, 1000


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(DIM, eps=1e-6)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.ln_2 = nn.LayerNorm(DIM, eps=1e-6)
        self.fc1 = nn.Linear(DIM, MLP)
        self.fc2 = nn.Linear(MLP, DIM)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln_1(x)).view(b, s, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln_2(x))))


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        n = (IMAGE // PATCH) ** 2
        self.patch = nn.Conv2d(3, DIM, PATCH, PATCH)
        self.cls = nn.Parameter(torch.zeros(1, 1, DIM))
        self.pos = nn.Parameter(torch.randn(1, n + 1, DIM) * 0.02)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(DIM, eps=1e-6)
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, images):
        x = self.patch(images).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), dim=1) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x)[:, 0])


def build_model():
    return ViT()


def example_batch(batch_size):
    return torch.randn(batch_size, 3, IMAGE, IMAGE), torch.randint(0, CLASSES, (batch_size,))


def training_step(model, batch):
    images, labels = batch
    return F.cross_entropy(model(images), labels)
