"""`torchvision:NAME`: a torchvision classification model by name (`torchvision.models.list_models(module=
torchvision.models)`), built with `weights=None`. The input size is the model's own where it fixes one (a
VisionTransformer's `image_size`), else the crop size of its default weights' transforms, as those weights were
trained and evaluated; 1000 classes, the builders' default."""

from __future__ import annotations

import warnings
from pathlib import Path

from advisor.errors import UserError
from advisor.profiler.schema import ModelSource
from advisor.profiler.sources.image import classification_step, image_batch

DEFAULT_SIZE, CLASSES = 224, 1000


def resolve_torchvision(name: str):
    from advisor.profiler.sources import Resolved, require, sha256_json, version_of

    if not name:
        raise UserError("torchvision: needs a model name", "e.g. torchvision:resnet18")
    torchvision = require("torchvision", "torchvision", f"torchvision:{name}")
    models = torchvision.models
    known = models.list_models(module=models)
    if name not in known:
        import difflib

        other = name in models.list_models()
        raise UserError(
            f"torchvision {version_of(torchvision)} has no classification model {name!r}"
            + (" (detection, segmentation and video models need their own inputs)" if other else ""),
            "write a model file for it" if other else "see torchvision.models.list_models(module=torchvision.models)",
            [] if other else difflib.get_close_matches(name, known, n=3),
        )
    import torch

    def build_model():
        with warnings.catch_warnings():  # Inception and GoogLeNet warn that their default init will change
            warnings.simplefilter("ignore", FutureWarning)
            return models.get_model(name, weights=None)

    with torch.device("meta"):  # the builder's own settings, read from a model that holds no memory
        probe = build_model()
    size, where = getattr(probe, "image_size", None), "the model's image_size"
    if not isinstance(size, int):
        crop = getattr(getattr(models.get_model_weights(name).DEFAULT, "transforms", None), "keywords", {})
        size, where = crop.get("crop_size"), "its default weights' crop_size"
        if not isinstance(size, int):
            size, where = DEFAULT_SIZE, f"no size known: {DEFAULT_SIZE}"
    del probe
    inputs = f"images [batch, 3, {size}, {size}] ({where}), {CLASSES} classes"

    source = ModelSource(
        kind="torchvision",
        id=name,
        library="torchvision",
        library_version=version_of(torchvision),
        config_sha256=sha256_json({"model": name, "input_size": [3, size, size], "num_classes": CLASSES}),
        architecture=name,
        inputs=inputs,
    )
    return Resolved(
        path=Path(f"torchvision:{name}"),
        sha256=source.config_sha256,
        build_model=build_model,
        example_batch=image_batch(3, size, size, CLASSES),
        training_step=classification_step,
        make_optimizer=None,
        source=source,
        name=name,
        label=f"torchvision:{name}",
        notes=[f"torchvision:{name}: built without weights; inputs {inputs}"],
    )
