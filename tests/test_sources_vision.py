"""timm:NAME and torchvision:NAME (advisor/profiler/sources/). Neither library is a test dependency (PyPI's
torchvision does not import beside the CPU torch CI uses, and timm needs torchvision), so the resolvers are tested
against small stand-ins put into sys.modules, shaped like the real APIs they call (checked against timm 1.0.31 and
torchvision 0.29.1: timm.is_model, timm.list_models, timm.create_model(name, pretrained=False),
timm.models.get_pretrained_cfg(name).to_dict(); torchvision.models.list_models(module=torchvision.models),
get_model(name, weights=None), get_model_weights(name).DEFAULT.transforms.keywords['crop_size']). Where the real
library imports, the last tests check real models against the library's own parameter counts."""

from __future__ import annotations

import functools
import sys
import types

import pytest
import torch
from torch import nn

from advisor.errors import UserError
from advisor.profiler.profile import profile_model
from advisor.profiler.sources import resolve

B = 2


def tiny_cnn(classes: int) -> nn.Module:
    # conv 3->8, 3x3, padding 1 (bias) + ReLU + global pool + linear 8->classes
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, classes)
    )


class TinyViT(nn.Module):
    """A model that fixes its input size, as torchvision's VisionTransformer does (image_size)."""

    def __init__(self):
        super().__init__()
        self.image_size = 16
        self.patch = nn.Conv2d(3, 4, 8, stride=8)
        self.head = nn.Linear(4 * 4, 1000)

    def forward(self, x):
        assert x.shape[-1] == self.image_size
        return self.head(self.patch(x).flatten(1))


class Cfg:
    def __init__(self, **data):
        self.data = data

    def to_dict(self):
        return dict(self.data)


@pytest.fixture
def fake_timm(monkeypatch):
    cfgs = {"tinynet": Cfg(architecture="tinynet", input_size=(3, 32, 48), num_classes=10, hf_hub_id="x/tinynet")}
    timm = types.ModuleType("timm")
    timm.__version__ = "9.9.9"
    timm.list_models = lambda: sorted(cfgs)
    timm.is_model = lambda name: name.split(".")[0] in cfgs
    timm.create_model = lambda name, pretrained=False: tiny_cnn(cfgs[name.split(".")[0]].data["num_classes"])
    models = types.ModuleType("timm.models")
    models.get_pretrained_cfg = lambda name, allow_unregistered=True: cfgs.get(name.split(".")[0])
    timm.models = models
    monkeypatch.setitem(sys.modules, "timm", timm)
    monkeypatch.setitem(sys.modules, "timm.models", models)
    return timm


@pytest.fixture
def fake_torchvision(monkeypatch):
    builders = {"tinycnn": lambda: tiny_cnn(1000), "tinyvit": TinyViT}
    crops = {"tinycnn": 40, "tinyvit": 64}  # the ViT's weights crop at 64, but it is built for 16
    tv = types.ModuleType("torchvision")
    tv.__version__ = "0.99.0+cpu"
    models = types.ModuleType("torchvision.models")

    def list_models(module=None):
        return sorted(builders) + ([] if module is models else ["tinydetector"])

    def get_model_weights(name):
        default = types.SimpleNamespace(transforms=functools.partial(object, crop_size=crops[name]), meta={})
        return types.SimpleNamespace(DEFAULT=default)

    models.list_models = list_models
    models.get_model = lambda name, weights=None: builders[name]()
    models.get_model_weights = get_model_weights
    tv.models = models
    monkeypatch.setitem(sys.modules, "torchvision", tv)
    monkeypatch.setitem(sys.modules, "torchvision.models", models)
    return tv


def fwd(p, op: str) -> float:
    return sum(o.flops.at(p.batch_size) for o in p.ops if o.phase == "forward" and o.op == op)


def test_timm_model_with_its_pretrained_input_size(fake_timm):
    mf = resolve("timm:tinynet")
    p = profile_model(mf, batch_size=B, device="meta")
    assert p.parameters == sum(t.numel() for t in tiny_cnn(10).parameters()) == 8 * 27 + 8 + 8 * 10 + 10  # 314
    assert p.input_shapes == ["arg0: [2, 3, 32, 48] fp32", "arg1: [2] int64"]  # input_size (3, 32, 48)
    # the conv: 2 * 27 MACs per output element, 8 channels at 32x48, plus the bias, per image
    assert fwd(p, "aten.convolution") == B * (2 * 27 * 8 * 32 * 48 + 8 * 32 * 48)
    assert fwd(p, "aten.addmm") == 2 * B * 8 * 10 + B * 10  # the classifier onto 10 classes
    src = p.source
    assert (src.kind, src.id, src.library, src.library_version, src.architecture) == (
        "timm", "tinynet", "timm", "9.9.9", "tinynet",
    )  # fmt: skip
    assert len(src.config_sha256) == 64 and p.model_file == "timm:tinynet" and p.name == "tinynet"
    assert resolve("timm:tinynet.some_tag").name == "tinynet_some_tag"  # a tagged configuration
    # the same configuration, the same hash; another one, another hash
    assert resolve("timm:tinynet").source.config_sha256 == src.config_sha256


def test_timm_unknown_and_missing(fake_timm, monkeypatch):
    with pytest.raises(UserError) as err:
        resolve("timm:tinynett")
    assert err.value.message == "timm 9.9.9 has no model 'tinynett'" and err.value.suggestions == ["tinynet"]
    monkeypatch.setitem(sys.modules, "timm", None)
    with pytest.raises(UserError) as err:
        resolve("timm:tinynet")
    assert err.value.line() == 'timm:tinynet needs timm, which is not installed; pip install "advisor[timm]"'


def test_torchvision_input_size_from_weights_or_the_model(fake_torchvision):
    p = profile_model(resolve("torchvision:tinycnn"), batch_size=B, device="meta")
    assert p.input_shapes[0] == "arg0: [2, 3, 40, 40] fp32"  # the default weights' crop_size
    assert p.parameters == 8 * 27 + 8 + 8 * 1000 + 1000  # 1000 classes, the builders' default
    assert (p.source.library, p.source.library_version) == ("torchvision", "0.99.0")  # without the build tag
    p = profile_model(resolve("torchvision:tinyvit"), batch_size=B, device="meta")
    assert p.input_shapes[0] == "arg0: [2, 3, 16, 16] fp32"  # the model's own image_size wins over the crop
    assert "image_size" in p.source.inputs


def test_torchvision_refuses_other_tasks_and_unknown_names(fake_torchvision, monkeypatch):
    with pytest.raises(UserError) as err:
        resolve("torchvision:tinydetector")
    assert "detection, segmentation and video models need their own inputs" in err.value.message
    with pytest.raises(UserError) as err:
        resolve("torchvision:tinycn")
    assert err.value.suggestions[0] == "tinycnn"
    monkeypatch.setitem(sys.modules, "torchvision", None)
    with pytest.raises(UserError) as err:
        resolve("torchvision:tinycnn")
    assert err.value.hint == 'pip install "advisor[torchvision]"'


def test_a_library_that_fails_to_import_is_one_line(monkeypatch):
    # PyPI's torchvision beside a torch it was not built for raises at import (not an ImportError)
    import importlib

    def import_module(name, *args):
        if name == "torchvision":
            raise RuntimeError("operator torchvision::nms does not exist")
        return real_import(name, *args)

    real_import = importlib.import_module
    monkeypatch.delitem(sys.modules, "torchvision", raising=False)
    monkeypatch.setattr(importlib, "import_module", import_module)
    with pytest.raises(UserError) as err:
        resolve("torchvision:resnet18")
    assert "fails to import: RuntimeError: operator torchvision::nms does not exist" in err.value.message


# ---------------------------------------------------------------- the real libraries, where they import


def real(name: str):
    try:
        return __import__(name)
    except Exception as exc:  # noqa: BLE001 - absent, or built for another torch
        pytest.skip(f"{name} does not import here ({type(exc).__name__})")


def test_real_timm_vit_base_matches_timm_count():
    timm = real("timm")
    p = profile_model(resolve("timm:vit_base_patch16_224"), batch_size=B, device="meta")
    with torch.device("meta"):
        assert p.parameters == sum(t.numel() for t in timm.create_model("vit_base_patch16_224").parameters())
    assert p.parameters == 86_567_656 and p.input_shapes[0] == "arg0: [2, 3, 224, 224] fp32"


def test_real_torchvision_resnet18_matches_its_weights_meta():
    tv = real("torchvision")
    p = profile_model(resolve("torchvision:resnet18"), batch_size=B, device="meta")
    assert p.parameters == tv.models.get_model_weights("resnet18").DEFAULT.meta["num_params"] == 11_689_512
