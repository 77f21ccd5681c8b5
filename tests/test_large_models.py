"""The published large-scale training set (benchmarks/data/published_large.yaml) and its model files
(benchmarks/large_models/): every row is complete and consistent with the catalog, every model file builds on meta
with the parameter count of its hand-derived formula and of its source, and the smallest one profiles to the FLOPs
counted by hand. Building a 1T-parameter model on meta takes well under a second; profiling one takes 10-20 s of CPU
on this machine, so only the 1.7B model is profiled here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from advisor.catalog.load import load_catalog

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "benchmarks" / "large_models"
DATA = ROOT / "benchmarks" / "data" / "published_large.yaml"


def load_model(stem: str):
    spec = importlib.util.spec_from_file_location(stem, MODELS / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def count_on_meta(stem: str) -> int:
    import torch

    with torch.device("meta"):
        model = load_model(stem).build_model()
    return sum(p.numel() for p in model.parameters())  # a tied head is one Parameter, counted once


# ---------------------------------------------------------------- hand formulas (derivations in the builders)


def gpt(V, s, h, L, tied=True, positions=True, embed_norm=False):
    """_gpt.py, MLP 4h, biases: a block is QKV 3h^2+3h, output h^2+h, MLP 8h^2+5h, two LayerNorms 4h = 12h^2+13h;
    plus tokens Vh, positions sh, final LayerNorm 2h, embedding LayerNorm 2h, untied head Vh."""
    return (
        L * (12 * h * h + 13 * h)
        + V * h
        + (s * h if positions else 0)
        + 2 * h
        + (2 * h if embed_norm else 0)
        + (0 if tied else V * h)
    )


def llama(V, h, L, heads, kv, f):
    """profiles/models/_llama.py: Q and output 2h^2, K and V 2h*kv*d (d = h/heads), SwiGLU 3hf, two RMSNorms 2h per
    block; untied input and output tables 2Vh; final RMSNorm h."""
    d = h // heads
    return 2 * V * h + L * (2 * h * h + 2 * h * kv * d + 3 * h * f + 2 * h) + h


def parallel(V, h, L, H, K, d, f, gated, qk_norm):
    """_parallel.py: Q and output 2hHd, K and V 2hKd, MLP 3hf (SwiGLU) or 2hf (ReLU), one norm h, QK norms 2d per
    block; the token table Vh (also the head) and the final norm h."""
    return L * (2 * h * H * d + 2 * h * K * d + (3 if gated else 2) * h * f + h + (2 * d if qk_norm else 0)) + V * h + h


MX = dict(V=32768, d=256, gated=False, qk_norm=True)  # MaxText's 2023 decoder: heads of 256, ReLU MLP, QK norms
FORMULA = {
    # Megatron-LM GPT, V 51,200, s 2048, tied (Narayanan et al. 2021 Table 1; Korthikanti et al. 2022 Table 3)
    "megatron_gpt_1p7b": gpt(51200, 2048, 2304, 24),
    "megatron_gpt_3p6b": gpt(51200, 2048, 3072, 30),
    "megatron_gpt_7p5b": gpt(51200, 2048, 4096, 36),
    "megatron_gpt_18b": gpt(51200, 2048, 6144, 40),
    "megatron_gpt_22b": gpt(51200, 2048, 6144, 48),
    "megatron_gpt_39b": gpt(51200, 2048, 8192, 48),
    "megatron_gpt_76b": gpt(51200, 2048, 10240, 60),
    "megatron_gpt_145b": gpt(51200, 2048, 12288, 80),
    "gpt3_175b": gpt(51200, 2048, 12288, 96),
    "megatron_gpt_175b": gpt(51200, 2048, 12288, 96),
    "megatron_gpt_310b": gpt(51200, 2048, 16384, 96),
    "megatron_gpt_530b": gpt(51200, 2048, 20480, 105),
    "megatron_gpt_1t": gpt(51200, 2048, 25600, 128),
    # Megatron-Core H100 weak scaling: V 131,072, s 4096, untied head
    "mcore_gpt_1p7b": gpt(131072, 4096, 2048, 24, tied=False),
    "mcore_gpt_16b": gpt(131072, 4096, 6144, 32, tied=False),
    "mcore_gpt_70b": gpt(131072, 4096, 8192, 84, tied=False),
    "mcore_gpt_462b": gpt(131072, 4096, 18432, 112, tied=False),
    # MPT (llm-foundry), V 50,368, s 2048
    "mpt_3b": gpt(50368, 2048, 2560, 32),
    "mpt_7b": gpt(50368, 2048, 4096, 32),
    "mpt_13b": gpt(50368, 2048, 5120, 40),
    "mpt_70b": gpt(50368, 2048, 8192, 80),
    # BLOOM: ALiBi (no position table), embedding LayerNorm
    "bloom_176b": gpt(250880, 2048, 14336, 70, positions=False, embed_norm=True),
    "llama2_70b": llama(32000, 8192, 80, 64, 8, 28672),
    "llama3_8b": llama(128256, 4096, 32, 32, 8, 14336),
    "llama3_70b": llama(128256, 8192, 80, 64, 8, 28672),
    "llama3_405b": llama(128256, 16384, 126, 128, 8, 53248),
    "llama3_405b_128k": llama(128256, 16384, 126, 128, 8, 53248),
    # PaLM: 48 heads of 256, one key/value head, SwiGLU 4h, no QK norms
    "palm_540b": parallel(256000, 18432, 118, 48, 1, 256, 73728, gated=True, qk_norm=False),
    # MaxText global_parameter_scale 32/64/128/512/1024 (width, layers, heads, MLP from get_individual_scales)
    "maxtext_32b": parallel(h=10240, L=32, H=32, K=32, f=32768, **MX),
    "maxtext_64b": parallel(h=10240, L=64, H=32, K=32, f=32768, **MX),
    "maxtext_128b": parallel(h=10240, L=64, H=64, K=64, f=65536, **MX),
    "maxtext_512b": parallel(h=20480, L=128, H=64, K=64, f=65536, **MX),
    "maxtext_1024b": parallel(h=20480, L=128, H=128, K=128, f=131072, **MX),
}

# What the sources print, with the rounding they print it at.
PUBLISHED = {
    "megatron_gpt_1p7b": (1.7e9, 0.05e9),  # Narayanan Table 1: 1.7 (billion, one decimal)
    "megatron_gpt_3p6b": (3.6e9, 0.05e9),
    "megatron_gpt_7p5b": (7.5e9, 0.05e9),
    "megatron_gpt_18b": (18.4e9, 0.05e9),
    "megatron_gpt_39b": (39.1e9, 0.05e9),
    "megatron_gpt_76b": (76.1e9, 0.05e9),
    "megatron_gpt_145b": (145.6e9, 0.05e9),
    "megatron_gpt_310b": (310.1e9, 0.05e9),
    "megatron_gpt_530b": (529.6e9, 0.05e9),
    "megatron_gpt_1t": (1008.0e9, 0.05e9),
    "mcore_gpt_1p7b": (1.7e9, 0.06e9),  # Megatron-Core table: 1.7B, 16B, 70B, 462B (rounded to the unit)
    "mcore_gpt_16b": (16e9, 0.5e9),
    "mcore_gpt_70b": (70e9, 0.5e9),
    "mcore_gpt_462b": (462e9, 0.5e9),
    "mpt_3b": (2651837440, 0),  # llm-foundry benchmarking README, NumParams column at sequence 2048
    "mpt_7b": (6658859008, 0),
    "mpt_13b": (12853954560, 0),
    "mpt_70b": (64862437376, 0),
    "bloom_176b": (176247271424, 0),  # bigscience/bloom model card: 176,247,271,424
    "llama3_405b": (405853388800, 0),  # meta-llama/Llama-3.1-405B: 405,853,388,800
    "llama3_70b": (70553706496, 0),  # Meta-Llama-3-70B: 70,553,706,496
    "llama3_8b": (8030261248, 0),  # Meta-Llama-3-8B: 8,030,261,248
    "llama2_70b": (68976648192, 0),  # Llama-2-70b: 68,976,648,192
    "palm_540b": (540.35e9, 0.01e9),  # PaLM Table 1: 540.35B
}


def model_stems() -> list[str]:
    return sorted(p.stem for p in MODELS.glob("*.py") if not p.stem.startswith("_"))


def test_every_model_file_has_a_formula():
    assert model_stems() == sorted(FORMULA)


@pytest.mark.parametrize("stem", sorted(FORMULA))
def test_parameter_count_matches_the_hand_formula(stem):
    assert count_on_meta(stem) == FORMULA[stem]


@pytest.mark.parametrize("stem", sorted(PUBLISHED))
def test_parameter_count_matches_the_source(stem):
    published, tol = PUBLISHED[stem]
    assert abs(FORMULA[stem] - published) <= tol, f"{stem}: {FORMULA[stem]:,} vs published {published:,.0f}"


def test_formula_spot_values():
    # Megatron 1T: 128*(12*25600^2 + 13*25600) + 51200*25600 + 2048*25600 + 2*25600
    #            = 1,006,674,329,600 + 1,310,720,000 + 52,428,800 + 51,200 = 1,008,038,758,400
    assert FORMULA["megatron_gpt_1t"] == 1_008_038_758_400
    # MaxText 1024B: 128*(2*20480*128*256*2 + 2*20480*131072 + 20480 + 512) + 32768*20480 + 20480
    #              = 128*(2,684,354,560 + 5,368,709,120 + 20,992) + 671,088,640 + 20,480 = 1,031,465,947,136
    assert FORMULA["maxtext_1024b"] == 1_031_465_947_136


def test_smallest_model_profiles_to_the_hand_count_of_its_matmuls():
    from advisor.profiler.profile import profile_model

    p = profile_model(MODELS / "megatron_gpt_1p7b.py", batch_size=1, device="meta", precision="bf16-mixed")
    assert p.parameters == FORMULA["megatron_gpt_1p7b"]
    fwd_mm = sum(o.flops.at(1) for o in p.ops if o.phase == "forward" and o.op in ("aten.mm", "aten.addmm"))
    # weights: 2 * tokens * (12 L h^2 + V h) = 2 * 2048 * (12*24*2304^2 + 51200*2304) = 6,745,246,138,368
    # addmm also adds its bias, one FLOP per output: tokens * L * (3h + h + 4h + h) = 2048*24*9*2304 = 1,019,215,872
    assert fwd_mm == pytest.approx(6_745_246_138_368 + 1_019_215_872, rel=1e-12)


# ---------------------------------------------------------------- the data file

REQUIRED = (
    "id model set hardware system instance devices precision layout seq_len micro_batch global_batch measured unit "
    "flops_convention source where accessed"
).split()
LAYOUT = {"tp", "pp", "vpp", "cp", "dp", "sequence_parallel", "recompute", "sharding"}


@pytest.fixture(scope="module")
def rows():
    return yaml.safe_load(DATA.read_text())["rows"]


def test_rows_are_complete_and_consistent(rows):
    catalog = load_catalog()
    assert len(rows) >= 30
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        rid = r["id"]
        assert all(k in r for k in REQUIRED), rid
        assert r["set"] in ("tuning", "report"), rid
        assert r["unit"] in ("model_tflops_per_gpu", "mfu", "tokens_per_s_per_gpu", "step_time_s"), rid
        assert r["precision"] in ("fp16-mixed", "bf16-mixed", "fp8-mixed"), rid
        assert (MODELS / f"{r['model']}.py").exists(), rid
        assert r["hardware"] in catalog.devices, rid
        if r["instance"] is not None:
            assert catalog.instances[r["instance"]].device == r["hardware"], rid
        lay = r["layout"]
        assert set(lay) == LAYOUT, rid
        assert lay["tp"] * lay["pp"] * lay["cp"] * lay["dp"] == r["devices"], rid
        assert r["global_batch"] % (lay["dp"] * r["micro_batch"]) == 0, rid
        assert lay["sharding"] in ("ddp", "zero1", "zero2", "fsdp"), rid
        assert lay["recompute"] in ("none", "selective", "full"), rid
        assert not lay["sequence_parallel"] or lay["tp"] > 1, rid
        assert r["measured"] > 0 and (r["unit"] != "mfu" or r["measured"] < 1), rid
        assert r["source"].startswith("https://"), rid
        assert set(r.get("assumed", [])) <= LAYOUT | {"precision", "micro_batch", "instance"}, rid
        assert r.get("kernels", "fused") in ("fused", "eager"), rid


def test_coverage_and_split(rows):
    families = {r["hardware"].split("-")[0] for r in rows}
    assert {"a100", "h100", "tpu"} <= families
    assert {r["precision"] for r in rows} >= {"bf16-mixed", "fp8-mixed"}
    tuning = [r for r in rows if r["set"] == "tuning"]
    assert 0.2 <= len(tuning) / len(rows) <= 0.3  # 13 of 52
    sizes = [FORMULA[r["model"]] for r in rows]
    assert min(sizes) < 2e9 and max(sizes) > 1e12  # 1.65B ... 1.03T
