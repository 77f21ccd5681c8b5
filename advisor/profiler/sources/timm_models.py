"""`timm:NAME`: a timm model by name (a tag such as `resnet50.a1_in1k` picks that pretrained configuration), built
with `pretrained=False`, so no weights are downloaded. Input size and class count come from the model's default
pretrained configuration (`timm.models.get_pretrained_cfg`), the one `create_model` applies."""

from __future__ import annotations

from pathlib import Path

from advisor.errors import UserError
from advisor.profiler.schema import ModelSource
from advisor.profiler.sources.image import classification_step, image_batch


def resolve_timm(name: str):
    from advisor.profiler.sources import Resolved, require, sha256_json, version_of

    if not name:
        raise UserError("timm: needs a model name", "e.g. timm:resnet50 or timm:vit_base_patch16_224")
    timm = require("timm", "timm", f"timm:{name}")
    if not timm.is_model(name):
        import difflib

        raise UserError(
            f"timm {version_of(timm)} has no model {name!r}",
            "list them with python -c 'import timm; print(timm.list_models())'",
            difflib.get_close_matches(name, timm.list_models(), n=3),
        )
    from timm.models import get_pretrained_cfg

    cfg = get_pretrained_cfg(name)
    data = cfg.to_dict() if cfg is not None else {}
    channels, height, width = tuple(data.get("input_size") or (3, 224, 224))
    classes = int(data.get("num_classes") or 1000)

    def build_model():
        return timm.create_model(name, pretrained=False)

    inputs = f"images [batch, {channels}, {height}, {width}] (pretrained_cfg input_size), {classes} classes"
    source = ModelSource(
        kind="timm",
        id=name,
        library="timm",
        library_version=version_of(timm),
        config_sha256=sha256_json({"model": name, "pretrained_cfg": data}),
        architecture=data.get("architecture") or name.split(".")[0],
        inputs=inputs,
    )
    return Resolved(
        path=Path(f"timm:{name}"),
        sha256=source.config_sha256,
        build_model=build_model,
        example_batch=image_batch(channels, height, width, classes),
        training_step=classification_step,
        make_optimizer=None,
        source=source,
        name=name.replace(".", "_"),
        label=f"timm:{name}",
        notes=[f"timm:{name}: built without pretrained weights; inputs {inputs}"],
    )
