"""ResNet-50 (He et al. 2016, "Deep Residual Learning for Image Recognition"), ImageNet 224x224, 1000 classes.

Layout as torchvision's resnet50 ("v1.5": the stride-2 of each first bottleneck sits on the 3x3 conv):
7x7/2 stem with 64 channels, 3x3/2 max-pool, bottleneck stages of [3, 4, 6, 3] blocks with widths
64, 128, 256, 512 (outputs 4x wider), global average pool, a 2048 -> 1000 classifier.
25,557,032 parameters; about 4.09 GMAC (8.2 GFLOP) forward per 224x224 image.

Batch 256 per device: NVIDIA DeepLearningExamples' ResNet-50 v1.5 recipe with mixed precision.
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH_SIZE = 256
# The training recipe's samples per optimizer step over all devices (advisor trains every configuration at it).
GLOBAL_BATCH = 256
GLOBAL_BATCH_SOURCE = (
    "He et al. 2016 and Goyal et al. 2017 (arXiv:1706.02677): SGD at a mini-batch of 256 images "
    "(torchvision's reference recipe: 8 GPUs x 32)"
)
IMAGE, CLASSES = 224, 1000


def conv_bn(cin, cout, k, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout))


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.conv1 = conv_bn(cin, width, 1)
        self.conv2 = conv_bn(width, width, 3, stride)
        self.conv3 = conv_bn(width, cout, 1)
        self.downsample = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else None

    def forward(self, x):
        y = F.relu(self.conv1(x))
        y = F.relu(self.conv2(y))
        y = self.conv3(y)
        return F.relu(y + (x if self.downsample is None else self.downsample(x)))


class ResNet50(nn.Module):
    def __init__(self, blocks=(3, 4, 6, 3), classes=CLASSES):
        super().__init__()
        self.stem = conv_bn(3, 64, 7, 2)
        layers, cin = [], 64
        for i, n in enumerate(blocks):
            width = 64 * 2**i
            for j in range(n):
                layers.append(Bottleneck(cin, width, 2 if j == 0 and i > 0 else 1))
                cin = 4 * width
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.stem(x)), 3, 2, 1)
        x = self.layers(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def build_model():
    return ResNet50()


def example_batch(batch_size):
    return torch.randn(batch_size, 3, IMAGE, IMAGE), torch.randint(0, CLASSES, (batch_size,))


def training_step(model, batch):
    images, labels = batch
    return F.cross_entropy(model(images), labels)
