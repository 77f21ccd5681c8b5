"""The shipped reference profiles (profiles/<name>.yaml): parameter counts against the published ones and
FLOPs against counts derived by hand from each architecture. Loads the committed YAML (no re-profiling of big
models); one test regenerates MobileNetV2 at batch 2 to catch drift between the profiler and the files."""

from __future__ import annotations

import hashlib
import importlib.util
import math
from pathlib import Path

import pytest

from advisor import api
from advisor.profiler.formulas import causal_pairs

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("regenerate", ROOT / "profiles" / "regenerate.py")
regenerate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(regenerate)

MM = ("aten.mm", "aten.addmm", "aten.bmm")
CONV = ("aten.convolution",)


def load(name: str):
    return api.profile_from(name)


def flops(p, phase: str, ops: tuple[str, ...] = (), module: str | None = None, contains: str = "") -> float:
    """FLOPs at the profile's own batch size of the ops named (or whose name contains `contains`)."""
    return sum(
        o.flops.at(p.batch_size)
        for o in p.ops
        if o.phase == phase
        and (o.op in ops or (contains and contains in o.op))
        and (module is None or o.module.startswith(module))
    )


def attention(heads: int, sq: int, sk: int, d: int, causal: bool) -> tuple[float, float]:
    """Forward and backward FLOPs of fused attention as the kernels compute them (advisor/profiler/formulas.py):
    per computed (query, key) pair forward q.k 2d + p.v 2d + 5 softmax ops, plus one divide per output element;
    backward recomputes q.k and does dV, dP, dQ, dK (2d each, so 10d) + 6 elementwise, plus 2 per output
    element for rowsum(dO*O). A causal mask keeps only pairs j <= i."""
    pairs = causal_pairs(sq, sk) if causal else sq * sk
    return heads * (pairs * (4 * d + 5) + sq * d), heads * (pairs * (10 * d + 6) + 2 * sq * d)


# ---------------------------------------------------------------- every reference profile

PUBLISHED = {  # parameters: published figure, tolerance (relative)
    "resnet50": (25.557e6, 1e-3),  # torchvision resnet50: 25,557,032
    "mobilenet_v2": (3.505e6, 1e-3),  # torchvision mobilenet_v2: 3,504,872 (the paper: 3.4M)
    "vit_b16": (86.568e6, 1e-3),  # torchvision vit_b_16: 86,567,656 (the paper: 86M)
    "bert_base": (110e6, 0.01),  # the paper: 110M (with the pooler instead of the MLM head)
    "bert_large": (340e6, 0.02),  # the paper: 340M
    "gpt2_124m": (124.44e6, 1e-3),  # 124,439,808 with the head tied to wte
    "llama2_7b": (6.738e9, 1e-3),  # Hugging Face Llama-2-7b: 6,738,415,616
    "llama3_8b": (8.030e9, 1e-3),  # Meta-Llama-3-8B: 8,030,261,248
    "llama2_70b": (68.98e9, 1e-3),  # Llama-2-70b: 68,976,648,192
    "llama3_70b": (70.55e9, 1e-3),  # Meta-Llama-3-70B: 70,553,706,496
    "llama3_405b": (405.853e9, 1e-4),  # Llama 3.1 405B: 2Vh + L(2h² + 2h·kv·d + 3hf + 2h) + h = 405,853,388,800
    "gpt3_175b": (175.0e9, 0.003),  # the paper's 175.0B; Vh + 2048h + L(12h² + 13h) + 2h = 174,604,259,328
    "lstm": (19.7804e6, 1e-6),  # 10000*650 + 2*(4*650*1300 + 2*4*650) + 650*10000 + 10000 = 19,780,400
}


def test_every_reference_model_has_a_current_profile():
    assert set(PUBLISHED) == set(regenerate.NAMES)
    for name in regenerate.NAMES:
        p = load(name)
        source = (ROOT / "profiles" / "models" / f"{name}.py").read_bytes()
        assert p.model_sha256 == hashlib.sha256(source).hexdigest(), f"{name}: run profiles/regenerate.py {name}"
        batch, precision = regenerate.settings(ROOT / "profiles" / "models" / f"{name}.py")
        assert (p.batch_size, p.precision, p.device, p.optimizer) == (batch, precision, "meta", "adamw")
        assert p.linear_in_batch and not p.uncounted_ops, name


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_counts_match_the_published_ones(name):
    published, tol = PUBLISHED[name]
    assert load(name).parameters == pytest.approx(published, rel=tol)


def test_mixed_precision_adamw_memory_per_parameter():
    # bf16-mixed keeps fp32 weights and gradients; AdamW adds m and v: 4 + 4 + 8 bytes per parameter, and a
    # 4-byte step counter per parameter tensor (148 in GPT-2: wte, wpe, 12 x 12 per block, ln_f weight and bias)
    p = load("gpt2_124m")
    assert p.memory.parameter_bytes == 4 * 124_439_808  # the tied head counted once
    assert p.memory.gradient_bytes == 4 * 124_439_808
    assert p.memory.optimizer_state_bytes == 8 * 124_439_808 + 4 * 148


# ---------------------------------------------------------------- CNNs: MACs from the layer list


def resnet50_macs() -> tuple[int, int]:
    """(conv MACs, stem MACs) per 224x224 image. Stem 7x7/2 3->64 at 112x112; after the 3x3/2 pool 56x56;
    stages [3, 4, 6, 3] of bottlenecks 1x1 (cin->w), 3x3 (w->w, the stage's stride), 1x1 (w->4w), and a 1x1
    projection (cin->4w, strided) on each stage's first block."""
    stem = 112 * 112 * 64 * 3 * 7 * 7  # 118,013,952
    macs, h, cin = stem, 56, 64
    for i, n in enumerate((3, 4, 6, 3)):
        w = 64 * 2**i
        for j in range(n):
            stride = 2 if j == 0 and i > 0 else 1
            out = h // stride
            macs += h * h * cin * w + out * out * w * w * 9 + out * out * w * 4 * w
            if j == 0:
                macs += out * out * cin * 4 * w
            h, cin = out, 4 * w
    return macs, stem


def test_resnet50_forward_is_4_09_gmac_per_image():
    p = load("resnet50")
    b = p.batch_size
    conv, stem = resnet50_macs()
    assert conv == 4_087_136_256
    fc = 2048 * 1000  # MACs; + 1000 bias adds
    assert conv + fc == pytest.approx(4.09e9, rel=1e-3)  # the published 4.09 GMAC (torchvision)
    assert flops(p, "forward", CONV) == 2 * conv * b  # 2 FLOPs per MAC, convs bias-free
    assert flops(p, "forward", MM) == (2 * fc + 1000) * b
    # backward: grad of input and of weight, each a conv of the forward's MACs, except that the stem's input
    # (the images) needs no gradient: 2 * forward - stem forward
    assert flops(p, "backward", ("aten.convolution_backward",)) == (2 * 2 * conv - 2 * stem) * b


def mobilenet_v2_macs() -> int:
    """MACs per 224x224 image: 3x3/2 stem 3->32 at 112; per inverted residual a 1x1 expansion (cin -> t*cin, at
    the input size, absent when t = 1), a depthwise 3x3 (9 MACs per output element, the block's stride) and a
    1x1 projection (t*cin -> c); a 1x1 320->1280 at 7x7."""
    macs, h, cin = 112 * 112 * 32 * 3 * 9, 112, 32
    for t, c, n, s in (
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ):
        for i in range(n):
            out = h // (s if i == 0 else 1)
            hidden = cin * t
            macs += (h * h * cin * hidden if t != 1 else 0) + out * out * hidden * 9 + out * out * hidden * c
            h, cin = out, c
    return macs + 7 * 7 * 320 * 1280


def test_mobilenet_v2_forward_and_depthwise_backward():
    p = load("mobilenet_v2")
    b = p.batch_size
    convs = mobilenet_v2_macs()
    assert convs + 1280 * 1000 == pytest.approx(300e6, rel=0.01)  # the paper's Table 4: 300M multiply-adds
    assert flops(p, "forward", CONV) == 2 * convs * b
    stem = 112 * 112 * 32 * 3 * 9
    # backward = 2 x forward minus the stem's input gradient; a per-groups=1 count (FlopCounterMode) of the
    # depthwise convs' backward would be C times larger: about 20x the total
    assert flops(p, "backward", ("aten.convolution_backward",)) == (4 * convs - 2 * stem) * b


# ---------------------------------------------------------------- transformers


def test_vit_b16_forward():
    p = load("vit_b16")
    b, d, n, L = p.batch_size, 768, 197, 12
    patch = 196 * d * 3 * 16 * 16  # MACs of the 16x16/16 conv; + one bias add per output
    assert flops(p, "forward", CONV) == (2 * patch + 196 * d) * b
    # per token per layer: qkv 3d^2 + proj d^2 + MLP 2 * 4d^2 = 12 d^2 MACs, bias adds 3d + d + 4d + d = 9d;
    # the head on the class token only: d * 1000 MACs + 1000
    assert flops(p, "forward", MM) == (L * n * (2 * 12 * d * d + 9 * d) + 2 * d * 1000 + 1000) * b
    fwd, _ = attention(12 * b, n, n, 64, causal=False)
    assert flops(p, "forward", contains="scaled_dot_product") == L * fwd
    macs = patch + L * n * 12 * d * d + L * 2 * n * n * d + d * 1000
    assert macs == pytest.approx(17.56e9, rel=0.01)  # the published 17.6 GMAC (fvcore, torchvision)


@pytest.mark.parametrize("name,d,L,heads", [("bert_base", 768, 12, 12), ("bert_large", 1024, 24, 16)])
def test_bert_forward_at_sequence_128(name, d, L, heads):
    p = load(name)
    b, s, V = p.batch_size, 128, 30522
    assert p.tokens_per_sample == s
    t = b * s
    # encoder: 12 d^2 MACs and 9d bias adds per token per layer; MLM head: dense d^2 + d, decoder d*V + V
    assert flops(p, "forward", MM) == t * (L * (24 * d * d + 9 * d) + 2 * d * d + d + 2 * d * V + V)
    fwd, bwd = attention(heads * b, s, s, d // heads, causal=False)
    assert flops(p, "forward", contains="scaled_dot_product") == L * fwd
    assert flops(p, "backward", contains="scaled_dot_product") == L * bwd


def test_gpt2_124m_forward_backward():
    p = load("gpt2_124m")
    b, s, d, L, V = p.batch_size, 1024, 768, 12, 50257
    t = b * s  # 12 * 1024 = 12,288 tokens
    # 2 * tokens * (12 L d^2 + d V) for the weights, + 9d bias adds per token per layer (the tied head has none)
    matmul = 2 * t * (12 * L * d * d + d * V)
    assert matmul == 3_035_923_218_432
    assert flops(p, "forward", MM) == matmul + t * L * 9 * d
    # causal attention as the kernel computes it: 1024 * 1025 / 2 = 524,800 pairs per head, not 1024^2
    fwd, bwd = attention(12 * b, s, s, 64, causal=True)
    assert causal_pairs(s, s) == 524_800
    assert flops(p, "forward", contains="scaled_dot_product") == L * fwd
    assert flops(p, "backward", contains="scaled_dot_product") == L * bwd
    # backward of every matmul: grad of input and of weight, each the forward's FLOPs (bias grads are sums)
    assert flops(p, "backward", MM) == 2 * matmul


@pytest.mark.parametrize(
    "name,V,d,L,heads,seq",
    [
        ("llama2_7b", 32000, 4096, 32, 32, 4096),
        ("llama3_8b", 128256, 4096, 32, 32, 8192),
        ("llama2_70b", 32000, 8192, 80, 64, 4096),
        ("llama3_70b", 128256, 8192, 80, 64, 8192),
    ],
)
def test_llama_training_is_6_p_tokens_plus_attention(name, V, d, L, heads, seq):
    p = load(name)
    t = p.batch_size * seq
    assert p.tokens_per_sample == seq
    # every weight but the embedding table and the (2L + 1) RMSNorm vectors is a matmul weight: 2 FLOPs per
    # weight per token forward, 4 backward (bias-free)
    weights = p.parameters - V * d - (2 * L + 1) * d
    assert flops(p, "forward", MM) == 2 * t * weights
    assert flops(p, "backward", MM) == 4 * t * weights
    fwd, bwd = attention(heads * p.batch_size, seq, seq, d // heads, causal=True)
    assert flops(p, "forward", contains="scaled_dot_product") == L * fwd
    assert flops(p, "backward", contains="scaled_dot_product") == L * bwd
    # the rule of thumb 6 P tokens, with the embedding's (not a matmul) share taken out, plus attention
    matrix = sum(o.flops.at(p.batch_size) for o in p.ops if o.category == "matrix")
    assert matrix == pytest.approx(6 * t * weights + L * (fwd + bwd), rel=1e-12)


def test_llama2_7b_training_step_against_6pd():
    p = load("llama2_7b")
    t = 4096
    six_pd = 6 * 6_738_415_616 * t  # 1.656e14
    attn = 32 * sum(attention(32, t, t, 128, causal=True))  # 32 layers: 1.55e13
    assert attn == pytest.approx(1.5486e13, rel=1e-3)
    # 6PD overcounts the embedding lookup (131M params, no matmul) and omits attention and the vector ops
    total = p.flops(1, "forward") + p.flops(1, "backward")
    assert total == pytest.approx(six_pd + attn, rel=0.02)


def test_lstm_cells_and_decoder():
    p = load("lstm")
    b, steps, h, V = p.batch_size, 35, 650, 10000
    # per layer per time step two gate matmuls (input and hidden, each [b, 650] x [650, 4*650]) with a bias
    # each: 2 * (2*b*h*4h + b*4h); 2 layers x 35 steps
    cell = 2 * (2 * b * h * 4 * h + b * 4 * h)
    assert flops(p, "forward", MM, module="lstm") == 2 * steps * cell
    assert flops(p, "forward", MM, module="decoder") == 2 * b * steps * h * V


# ---------------------------------------------------------------- drift


def test_regenerating_mobilenet_at_batch_2_matches_the_committed_profile(tmp_path):
    committed = load("mobilenet_v2")
    fresh = regenerate.regenerate("mobilenet_v2", tmp_path, batch_size=2)
    for phase in ("forward", "backward", "optimizer"):
        assert fresh.flops(2, phase) == pytest.approx(committed.flops(2, phase), rel=1e-9), phase
        assert fresh.bytes(2, phase) == pytest.approx(committed.bytes(2, phase), rel=1e-9), phase
    assert fresh.memory.activation_bytes.at(2) == pytest.approx(committed.memory.activation_bytes.at(2), rel=1e-9)
    assert math.isclose(fresh.parameters, committed.parameters)
