"""ResNeXt-101 32x4d (Xie et al. 2017, "Aggregated Residual Transformations for Deep Neural Networks"), ImageNet
224x224, 1000 classes.

A ResNet-101 layout ([3, 4, 23, 3] bottleneck blocks, 7x7/2 stem with 64 channels, 3x3/2 max-pool, global average
pool, 2048 -> 1000 classifier) whose 3x3 convs are grouped: cardinality 32 with 4 channels per group in the first
stage, so the bottleneck widths are 128, 256, 512, 1024 and the block outputs 256, 512, 1024, 2048. The stride 2 of
each stage's first block sits on the grouped 3x3 conv ("v1.5", as torchvision, timm and NVIDIA's
DeepLearningExamples build it). Every conv is bias-free and followed by batch norm.
44,177,704 parameters (timm's resnext101_32x4d: 44.18 M); about 8.0 GMAC forward per image.

Why these shapes: the measured rows are NVIDIA DeepLearningExamples' resnext101-32x4d (224x224, batch 128 per GPU
with AMP/TF32, 64 with FP32) and timm's training benchmark of resnext101_32x4d (224x224). Batch 128 per device: the
DeepLearningExamples AMP recipe.
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH_SIZE = 128
IMAGE, CLASSES = 224, 1000
BLOCKS, CARDINALITY, GROUP_WIDTH = (3, 4, 23, 3), 32, 4


def conv_bn(cin, cout, k, stride=1, groups=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout))


class Block(nn.Module):
    def __init__(self, cin, width, cout, stride):
        super().__init__()
        self.conv1 = conv_bn(cin, width, 1)
        self.conv2 = conv_bn(width, width, 3, stride, groups=CARDINALITY)
        self.conv3 = conv_bn(width, cout, 1)
        self.downsample = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else None

    def forward(self, x):
        y = F.relu(self.conv1(x))
        y = F.relu(self.conv2(y))
        y = self.conv3(y)
        return F.relu(y + (x if self.downsample is None else self.downsample(x)))


class ResNeXt(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 64, 7, 2)
        layers, cin = [], 64
        for i, n in enumerate(BLOCKS):
            width, cout = CARDINALITY * GROUP_WIDTH * 2**i, 256 * 2**i
            for j in range(n):
                layers.append(Block(cin, width, cout, 2 if j == 0 and i > 0 else 1))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.stem(x)), 3, 2, 1)
        x = self.layers(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def build_model():
    return ResNeXt()


def example_batch(batch_size):
    return torch.randn(batch_size, 3, IMAGE, IMAGE), torch.randint(0, CLASSES, (batch_size,))


def training_step(model, batch):
    images, labels = batch
    return F.cross_entropy(model(images), labels)


def make_optimizer(parameters):
    # both sources train with SGD with momentum (DeepLearningExamples: momentum 0.875; timm's benchmark: 0.9)
    return torch.optim.SGD(parameters, lr=0.1, momentum=0.875)
