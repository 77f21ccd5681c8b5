"""SSD300 with a ResNet-50 backbone (Liu et al. 2016, "SSD: Single Shot MultiBox Detector"; the backbone change
after Huang et al. 2017), COCO, 300x300 input, 81 classes, as NVIDIA DeepLearningExamples' SSD300 v1.1 builds it.

Backbone: ResNet-50 up to conv4_x (stem, layer1..layer3; conv5_x, pool and classifier removed), with every stride
of conv4_x's first block set to 1, so its 1024-channel output stays 38x38. Five extra blocks (1x1 conv to 256, 256,
128, 128, 128 channels, then a 3x3 conv to 512, 512, 256, 256, 256; the first three with stride 2 and padding 1, the
last two unpadded; batch norm and ReLU after each conv) give 19x19, 10x10, 5x5, 3x3 and 1x1 maps. Six heads (3x3
convs with bias) predict 4 box offsets and 81 class scores for 4, 6, 6, 6, 4, 4 default boxes per position:
38^2*4 + 19^2*6 + 10^2*6 + 5^2*6 + 3^2*4 + 1*4 = 8732 boxes. The loss is DeepLearningExamples' (Smooth L1 on the
offsets of positive boxes, cross-entropy with hard negative mining: negatives ranked by two sorts over the 8732
boxes, three negatives per positive), normalised by the positives.
Parameters: backbone 8,543,296 + extra blocks 3,773,696 + box heads 497,784 + class heads 10,080,126 = 22,894,902
(derived from the published layout; the README states no count).

Why these shapes: the measured rows (DeepLearningExamples' SSD README and Lambda's deeplearning-benchmark, ssd)
train this model on COCO at 300x300 with SGD with momentum 0.9. Box matching and augmentation run in the input
pipeline (DALI), not in the step, so the batch here carries already-matched targets. Batch 64 per device: the
DeepLearningExamples A100 and V100 mixed-precision tables.
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH_SIZE = 64
IMAGE, CLASSES, BOXES = 300, 81, 8732
CHANNELS, MIDDLE, DEFAULTS = (1024, 512, 512, 256, 256, 256), (256, 256, 128, 128, 128), (4, 6, 6, 6, 4, 4)


def conv_bn(cin, cout, k, stride=1, padding=None):
    padding = k // 2 if padding is None else padding
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, padding, bias=False), nn.BatchNorm2d(cout))


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.conv1 = conv_bn(cin, width, 1)
        self.conv2 = conv_bn(width, width, 3, stride)
        self.conv3 = conv_bn(width, cout, 1)
        self.downsample = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else None

    def forward(self, x):
        y = self.conv3(F.relu(self.conv2(F.relu(self.conv1(x)))))
        return F.relu(y + (x if self.downsample is None else self.downsample(x)))


class SSD300(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 64, 7, 2)
        layers, cin = [], 64
        for i, (n, stride) in enumerate(zip((3, 4, 6), (1, 2, 1), strict=True)):  # conv4_x (layer3) keeps stride 1
            for j in range(n):
                layers.append(Bottleneck(cin, 64 * 2**i, stride if j == 0 else 1))
                cin = 4 * 64 * 2**i
        self.backbone = nn.Sequential(*layers)
        extra = []
        for i, (a, b, mid) in enumerate(zip(CHANNELS[:-1], CHANNELS[1:], MIDDLE, strict=True)):
            stride, padding = (2, 1) if i < 3 else (1, 0)
            extra.append(nn.Sequential(conv_bn(a, mid, 1), nn.ReLU(), conv_bn(mid, b, 3, stride, padding), nn.ReLU()))
        self.extra = nn.ModuleList(extra)
        self.loc = nn.ModuleList(nn.Conv2d(c, n * 4, 3, padding=1) for c, n in zip(CHANNELS, DEFAULTS, strict=True))
        self.conf = nn.ModuleList(
            nn.Conv2d(c, n * CLASSES, 3, padding=1) for c, n in zip(CHANNELS, DEFAULTS, strict=True)
        )
        # default boxes (x, y, w, h), fixed: the loss encodes the targets against them
        self.register_buffer("dboxes", torch.rand(1, 4, BOXES) * 0.9 + 0.05)

    def forward(self, x):
        x = self.backbone(F.max_pool2d(F.relu(self.stem(x)), 3, 2, 1))
        feeds = [x]
        for block in self.extra:
            x = block(x)
            feeds.append(x)
        b = x.shape[0]
        locs = torch.cat([head(f).reshape(b, 4, -1) for head, f in zip(self.loc, feeds, strict=True)], 2).contiguous()
        confs = torch.cat(
            [head(f).reshape(b, CLASSES, -1) for head, f in zip(self.conf, feeds, strict=True)], 2
        ).contiguous()
        return locs, confs


def build_model():
    return SSD300()


def example_batch(batch_size):
    images = torch.randn(batch_size, 3, IMAGE, IMAGE)
    boxes = torch.rand(batch_size, 4, BOXES) * 0.9 + 0.05  # matched ground-truth boxes (x, y, w, h) per default box
    labels = torch.randint(0, CLASSES, (batch_size, BOXES)).float()  # class per default box, 0 = background
    return images, boxes, labels  # labels travel as floats so they are not taken for tokens


def training_step(model, batch):
    images, gloc, glabel = batch
    glabel = glabel.long()
    ploc, pconf = model(images)
    d = model.dboxes
    target = torch.cat((10.0 * (gloc[:, :2] - d[:, :2]) / d[:, 2:], 5.0 * (gloc[:, 2:] / d[:, 2:]).log()), dim=1)
    mask = glabel > 0
    positives = mask.sum(dim=1)
    sl1 = (mask.float() * F.smooth_l1_loss(ploc.float(), target, reduction="none").sum(dim=1)).sum(dim=1)
    con = F.cross_entropy(pconf.float(), glabel, reduction="none")
    con_neg = con.masked_fill(mask, 0.0)
    _, order = con_neg.sort(dim=1, descending=True)
    _, rank = order.sort(dim=1)
    negatives = rank < torch.clamp(3 * positives, max=BOXES).unsqueeze(-1)
    closs = (con * (mask | negatives).float()).sum(dim=1)
    found = (positives > 0).float()
    return ((sl1 + closs) * found / positives.float().clamp(min=1e-6)).mean()


def make_optimizer(parameters):
    # DeepLearningExamples' SSD recipe: SGD with momentum 0.9
    return torch.optim.SGD(parameters, lr=2.6e-3, momentum=0.9)
