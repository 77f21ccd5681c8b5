"""The model files of benchmarks/gpu_models/ (the workloads of the published GPU measurements in
benchmarks/data/published_gpu.yaml): each builds with the published parameter count and profiles on the meta device,
and the FLOPs that fix each workload's shape (sequence length, vocabulary, layer sizes) match a hand derivation."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "benchmarks" / "gpu_models"
MM = ("aten.mm", "aten.addmm", "aten.bmm")

PUBLISHED = {
    # the 32x4d layout counted exactly; timm's results CSVs list resnext101_32x4d at 44.18 M
    "resnext101_32x4d": 44_177_704,
    # torchvision efficientnet_b0: 5,288,548 (timm: 5.29 M)
    "efficientnet_b0": 5_288_548,
    # BERT-large with the vocabulary padded to 30528, pooler and span head, the paper's "340M":
    # embeddings 30528*1024 + 512*1024 + 2*1024 + 2*1024 = 31,789,056; a layer 4*(1024^2+1024) + 1024*4096+4096
    # + 4096*1024+1024 + 2*2048 = 12,596,224, times 24 = 302,309,376; pooler 1,049,600; head 2,050 -> 335,150,082
    "bert_large_squad": 335_150_082,
    # the same encoder and pooler with pre-training's heads: masked-LM transform 1024^2+1024 + 2048 = 1,051,648,
    # decoder bias 30,528 (weight tied), next-sentence 2,050 -> 31,789,056 + 302,309,376 + 1,049,600 + 1,051,648
    # + 30,528 + 2,050 = 336,232,258
    "bert_large_pretrain": 336_232_258,
    # BERT-base likewise, the paper's "110M": embeddings 30528*768 + 512*768 + 2*768 + 2*768 = 23,841,792; a layer
    # 4*(768^2+768) + 768*3072+3072 + 3072*768+768 + 2*1536 = 7,087,872, times 12 = 85,054,464; pooler 590,592;
    # head 1,538 -> 109,488,386
    "bert_base_squad": 109_488_386,
    # NeuMF on ML-20M: (138,493 + 26,744) * (64 + 128) = 31,725,504 embedding weights; MLP 256*256+256 +
    # 256*128+128 + 128*64+64 = 106,944; final 128+1 = 129 -> 31,832,577
    "ncf": 31_832_577,
    # SSD300-ResNet50: ResNet-50 stem to conv4_x 8,543,296; extra blocks 3,773,696; box heads 497,784; class heads
    # 10,080,126 -> 22,894,902
    "ssd300": 22_894_902,
    # GNMT v2 4-layer, vocabulary 32,320 (DeepLearningExamples states no count): embedding 33,095,680; encoder
    # 2*8,396,800 + 12,591,104 + 2*8,396,800 = 46,178,304; decoder LSTMs 8,396,800 + 3*12,591,104 = 46,170,112;
    # attention 2*1024^2 + 1024 + 1 + 1024 = 2,099,201; classifier 1024*32320 + 32320 = 33,128,000 -> 160,671,297
    "gnmt": 160_671_297,
    # the same layers at the bucketed WMT16 lengths
    "gnmt_wmt16": 160_671_297,
    # Transformer-XL base (DeepLearningExamples): embedding 267,735*512 = 137,080,320; a layer 512*1536 + 2*512^2
    # + 512*2048+2048 + 2048*512+512 + 2*1024 = 3,412,480, times 16 = 54,599,680; shared biases 2*8*64 = 1,024;
    # output bias 267,735; cluster logits 3*512 + 3 = 1,539 -> 191,950,298
    "transformer_xl_base": 191_950_298,
    # the same without the three cluster logits (no cutoffs): 191,950,298 - 1,539 = 191,948,759
    "transformer_xl_base_full_softmax": 191_948_759,
}


def module(name: str):
    spec = importlib.util.spec_from_file_location(f"gpu_model_{name}", MODELS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@functools.cache
def profile(name: str):
    from advisor.profiler.profile import profile_model

    # batch 2 (and 4, which the profiler adds): at batch 1 some ops specialise (and SSD's 1x1 maps cannot batch-norm)
    return profile_model(MODELS / f"{name}.py", batch_size=2, device="meta", precision="fp16-mixed")


def forward_flops(p, ops=MM, module_prefix: str = "") -> float:
    """Forward FLOPs per sample of the ops named, under the module prefix given."""
    chosen = (o for o in p.ops if o.phase == "forward" and o.op in ops and o.module.startswith(module_prefix))
    return sum(o.flops.per_sample for o in chosen)


def test_every_model_file_has_a_published_count():
    assert {p.stem for p in MODELS.glob("[!_]*.py")} == set(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_count_is_the_published_one(name):
    import torch

    with torch.device("meta"):
        model = module(name).build_model()
    assert sum(p.numel() for p in model.parameters()) == PUBLISHED[name]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_profiles_on_meta(name):
    p = profile(name)
    assert p.parameters == PUBLISHED[name]
    assert p.linear_in_batch or name == "transformer_xl_base"  # its tail clusters take round(share * tokens) rows
    assert forward_flops(p, ops=tuple({o.op for o in p.ops})) > 0


TOKENS = [
    ("bert_large_pretrain", 128),
    ("bert_large_squad", 384),
    ("bert_base_squad", 384),
    ("gnmt", 50),
    ("gnmt_wmt16", 62),
]


@pytest.mark.parametrize(("name", "tokens"), TOKENS)
def test_tokens_per_sample_is_what_the_sources_count(name, tokens):
    # SQuAD features are padded to 384; GNMT: source + target positions (25 + 25; 31 + 31 padded, of which the
    # published rows count 50.36: published.py converts by TOKENS_COUNTED); Transformer-XL is below
    assert profile(name).tokens_per_sample == tokens


def test_bert_large_squad_forward_matmuls_at_384():
    # per token and layer: q, k, v, out 4*(2*1024*1024 + 1024) + MLP (2*1024*4096 + 4096) + (2*4096*1024 + 1024)
    # = 25,175,040, times 24 layers and 384 tokens = 232,013,168,640; attention bmm 24 layers * 2 (scores,
    # context) * 2*16*384*384*64 = 14,495,514,624; pooler 2*1024*1024 + 1024 = 2,098,176 (one token); span head
    # 384 * (2*1024*2 + 2) = 1,573,632 -> 246,512,355,072
    assert forward_flops(profile("bert_large_squad")) == pytest.approx(246_512_355_072, rel=1e-9)


def test_bert_large_pretrain_runs_the_mlm_head_on_20_masked_positions():
    # encoder per token and layer 25,175,040 (as above), times 24 layers and 128 tokens = 77,337,722,880; attention
    # bmm 24 * 2 * 2*16*128*128*64 = 1,610,612,736; pooler 2,098,176; masked-LM transform 20 * (2*1024^2 + 1024)
    # = 41,963,520; decoder 20 * (2*1024*30528 + 30528) = 1,251,037,440; next-sentence 2*1024*2 + 2 = 4,098
    # -> 80,243,438,850 (on all 128 positions the decoder alone would be 8,006,639,616)
    assert forward_flops(profile("bert_large_pretrain")) == pytest.approx(80_243_438_850, rel=1e-9)


def test_ncf_mlp_per_sample():
    # addmm 2*m*n*k + m*n per sample: 256->256 131,328; 256->128 65,664; 128->64 16,448; (64+64)->1 257 = 213,697
    assert forward_flops(profile("ncf")) == pytest.approx(213_697, rel=1e-9)


def test_gnmt_classifier_over_25_target_tokens():
    # 25 target tokens * 2*1024*32320 = 1,654,784,000 (the bias add is a separate elementwise op here)
    assert forward_flops(profile("gnmt"), module_prefix="classifier") == pytest.approx(1_654_784_000, rel=1e-9)


def test_gnmt_wmt16_pads_the_target_and_packs_the_first_encoder_layer():
    p = profile("gnmt_wmt16")
    # the classifier over 31 padded target positions: 31 * 2*1024*32320 = 2,051,932,160
    assert forward_flops(p, module_prefix="classifier") == pytest.approx(2_051_932_160, rel=1e-9)
    # encoder LSTM gate GEMMs (addmm 2*m*n*k + m*n per step, 4096 gates): a step of a 1024-wide input is
    # (2*1024*4096 + 4096) for the input and the same for the hidden state, 16,785,408; of a 2048-wide input
    # (2*2048*4096 + 4096) + 8,392,704 = 25,174,016. The bidirectional layer at the 26 packed positions:
    # 2 * 26 * 16,785,408 = 872,841,216; the second layer at 31 padded positions 31 * 25,174,016 = 780,394,496;
    # the last two 2 * 31 * 16,785,408 = 1,040,695,296 -> 2,693,931,008 (all 31 positions: 3,208,708,096)
    assert forward_flops(p, ops=("aten.addmm",), module_prefix="enc.") == pytest.approx(2_693_931_008, rel=1e-9)


def test_transformer_xl_qkv_spans_memory_and_segment():
    p = profile("transformer_xl_base")
    assert p.tokens_per_sample == 192
    # q, k, v over the 192 memory + 192 segment positions: 16 layers * 384 * 2*512*1536 = 9,663,676,416
    assert forward_flops(p, module_prefix="layers.*.qkv") == pytest.approx(9_663_676_416, rel=1e-9)


def test_transformer_xl_full_softmax_scores_every_word_for_every_token():
    p = profile("transformer_xl_base_full_softmax")
    assert p.tokens_per_sample == 192
    # the tied output layer at the model's root: 192 tokens * (2*512*267,735 + 267,735 bias) = 52,690,248,000
    head = sum(o.flops.per_sample for o in p.ops if o.phase == "forward" and o.op in MM and o.module == "")
    assert head == pytest.approx(52_690_248_000, rel=1e-9)


def test_ssd300_class_head_on_the_38x38_map():
    # the first class head: a 3x3 conv 1024 -> 4*81 over 38x38, 2 * 38*38 * 324 * 1024*9 = 8,622,931,968 per image
    p = profile("ssd300")
    head = [o for o in p.ops if o.phase == "forward" and o.op == "aten.convolution" and o.module.startswith("conf")]
    assert max(o.flops.per_sample for o in head) == pytest.approx(8_622_931_968, rel=1e-3)
