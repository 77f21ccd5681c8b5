"""EfficientNet-B0 (Tan & Le 2019, "EfficientNet: Rethinking Model Scaling for Convolutional Neural Networks"),
ImageNet 224x224, 1000 classes.

Layout as the paper's Table 1: a 3x3/2 stem with 32 channels, then MBConv stages (expansion, kernel, first stride,
output channels, repeats) of (1,3,1,16,1) (6,3,2,24,2) (6,5,2,40,2) (6,3,2,80,3) (6,5,1,112,3) (6,5,2,192,4)
(6,3,1,320,1), a 1x1 conv to 1280, global average pool, dropout 0.2 and a 1280 -> 1000 classifier. An MBConv block
is a 1x1 expansion (skipped when the expansion is 1), a depthwise kxk conv, squeeze-and-excitation (global pool,
1x1 conv to a quarter of the block's input channels, SiLU, 1x1 conv back, sigmoid gate) and a 1x1 projection;
convs are bias-free with batch norm and SiLU, the residual is kept when the stride is 1 and the channels match.
5,288,548 parameters (torchvision's efficientnet_b0; timm's efficientnet_b0: 5.29 M); about 0.39 GMAC forward.
Stochastic depth (drop-connect on the residual branch) is left out: it is one elementwise multiply per block.

Why these shapes: the measured rows are NVIDIA DeepLearningExamples' efficientnet-b0 (224x224, RMSprop, batch 256
per A100 and 128 per V100 16 GB with AMP) and timm's training benchmark of efficientnet_b0 (224x224). Batch 256
per device: the DeepLearningExamples A100 recipe.
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH_SIZE = 256
IMAGE, CLASSES = 224, 1000
STAGES = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3), (6, 5, 2, 192, 4))
STAGES += ((6, 3, 1, 320, 1),)


def conv_bn(cin, cout, k, stride=1, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, *([nn.SiLU()] if act else []))


class MBConv(nn.Module):
    def __init__(self, cin, cout, expand, k, stride):
        super().__init__()
        hidden, squeeze = cin * expand, max(1, cin // 4)
        self.expand = conv_bn(cin, hidden, 1) if expand != 1 else None
        self.depthwise = conv_bn(hidden, hidden, k, stride, groups=hidden)
        self.se_reduce = nn.Conv2d(hidden, squeeze, 1)
        self.se_expand = nn.Conv2d(squeeze, hidden, 1)
        self.project = conv_bn(hidden, cout, 1, act=False)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = x if self.expand is None else self.expand(x)
        y = self.depthwise(y)
        y = y * torch.sigmoid(self.se_expand(F.silu(self.se_reduce(F.adaptive_avg_pool2d(y, 1)))))
        y = self.project(y)
        return x + y if self.residual else y


class EfficientNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 32, 3, 2)
        blocks, cin = [], 32
        for expand, k, stride, cout, repeats in STAGES:
            for j in range(repeats):
                blocks.append(MBConv(cin, cout, expand, k, stride if j == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = conv_bn(cin, 1280, 1)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(1280, CLASSES)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.fc(self.drop(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)))


def build_model():
    return EfficientNet()


def example_batch(batch_size):
    return torch.randn(batch_size, 3, IMAGE, IMAGE), torch.randint(0, CLASSES, (batch_size,))


def training_step(model, batch):
    images, labels = batch
    return F.cross_entropy(model(images), labels)


def make_optimizer(parameters):
    # DeepLearningExamples' EfficientNet recipe: RMSprop, alpha 0.9, eps 0.01, momentum 0.9 (configs.yml)
    return torch.optim.RMSprop(parameters, lr=0.08, alpha=0.9, eps=0.01, momentum=0.9)
