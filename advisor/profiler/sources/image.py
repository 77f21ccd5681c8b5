"""What timm and torchvision image classifiers share: a batch of random images with class labels, and the
cross-entropy step (models with auxiliary heads, such as Inception and GoogLeNet in training mode, return several
logits: each adds its loss, as their training recipes do)."""

from __future__ import annotations

from typing import Any


def image_batch(channels: int, height: int, width: int, classes: int):
    def example_batch(batch_size: int):
        import torch

        return torch.randn(batch_size, channels, height, width), torch.randint(0, classes, (batch_size,))

    return example_batch


def classification_step(model: Any, batch: Any):
    import torch
    import torch.nn.functional as F

    images, labels = batch
    out = model(images)
    logits = [t for t in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(t, torch.Tensor)]
    loss = F.cross_entropy(logits[0], labels)
    for aux in logits[1:]:
        loss = loss + F.cross_entropy(aux, labels)
    return loss
