"""MobileNetV2 (Sandler et al. 2018, "MobileNetV2: Inverted Residuals and Linear Bottlenecks"), 224x224, width 1.0.

Layout as the paper's Table 2 (and torchvision's mobilenet_v2): a 3x3/2 stem with 32 channels, inverted
residual blocks (expansion t, output channels c, repeats n, first stride s) of
(1,16,1,1) (6,24,2,2) (6,32,3,2) (6,64,4,2) (6,96,3,1) (6,160,3,2) (6,320,1,1), a 1x1 conv to 1280, global
average pool, dropout 0.2 and a 1280 -> 1000 classifier. Every conv is bias-free and followed by batch norm;
the depthwise 3x3 convs have groups = channels. 3,504,872 parameters; about 300 MMAC forward per image.

Batch 96 per device: the paper trained with 16 workers of batch 96 each.
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH_SIZE = 96
# The training recipe's samples per optimizer step over all devices (advisor trains every configuration at it).
GLOBAL_BATCH = 256
GLOBAL_BATCH_SOURCE = (
    "torchvision's reference recipe for mobilenet_v2 (8 GPUs x 32, lr 0.045); the paper trained 16 "
    "asynchronous workers of 96"
)
IMAGE, CLASSES = 224, 1000
SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def conv_bn(cin, cout, k, stride=1, groups=1, relu=True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, *([nn.ReLU6()] if relu else []))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, t):
        super().__init__()
        hidden = cin * t
        layers = [conv_bn(cin, hidden, 1)] if t != 1 else []
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, cout, 1, relu=False)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV2(nn.Module):
    def __init__(self, classes=CLASSES):
        super().__init__()
        layers, cin = [conv_bn(3, 32, 3, 2)], 32
        for t, c, n, s in SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.dropout = nn.Dropout(0.2)
        self.classifier = nn.Linear(1280, classes)

    def forward(self, x):
        x = torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1)
        return self.classifier(self.dropout(x))


def build_model():
    return MobileNetV2()


def example_batch(batch_size):
    return torch.randn(batch_size, 3, IMAGE, IMAGE), torch.randint(0, CLASSES, (batch_size,))


def training_step(model, batch):
    images, labels = batch
    return F.cross_entropy(model(images), labels)
