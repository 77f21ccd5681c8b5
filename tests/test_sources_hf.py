"""hf: models built from their configuration (advisor/profiler/sources/hf.py), offline: every config is made here,
from transformers' config classes, and written as a local config.json. Parameter counts are checked against
transformers' own count of the same model, FLOPs against hand counts derived beside each test."""

from __future__ import annotations

import hashlib
import json
import os
import sys

import pytest
from conftest import assert_user_error, run_cli

from advisor.errors import UserError
from advisor.profiler.formulas import causal_pairs
from advisor.profiler.profile import profile_model
from advisor.profiler.sources import resolve

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

B, S = 2, 32  # batch and sequence of every text test
T = B * S  # tokens in a batch: the m of every linear layer's GEMM


def write(tmp_path, config, name: str) -> str:
    folder = tmp_path / name
    config.save_pretrained(folder)
    return str(folder / "config.json")


def library_count(config, auto) -> int:
    """transformers' own parameter count of the model it builds from `config` (on meta: no memory)."""
    with torch.device("meta"):
        return auto.from_config(config).num_parameters()


def fwd(p, ops: tuple[str, ...]) -> float:
    return sum(o.flops.at(p.batch_size) for o in p.ops if o.phase == "forward" and o.op in ops)


MM = ("aten.mm", "aten.addmm")
SDPA = ("aten._scaled_dot_product_efficient_attention", "aten._scaled_dot_product_flash_attention")


def attention(heads: int, sq: int, d: int, causal: bool, dropout: bool) -> int:
    """Fused attention forward per sequence (advisor/profiler/formulas.py): per computed (query, key) pair
    q.k 2d + p.v 2d + 5 softmax ops (+1 with dropout), plus one divide per output element."""
    pairs = causal_pairs(sq, sq) if causal else sq * sq
    return heads * (pairs * (4 * d + 5 + dropout) + sq * d)


def gpt2_config(**extra):
    return transformers.GPT2Config(
        n_layer=2, n_embd=64, n_head=4, vocab_size=100, n_positions=S, architectures=["GPT2LMHeadModel"], **extra
    )


def test_gpt2_causal_lm_from_a_local_config_json(tmp_path):
    path = write(tmp_path, gpt2_config(), "tiny-gpt2")
    mf = resolve(f"hf:{path}")
    p = profile_model(mf, batch_size=B, device="meta")
    d, L, V = 64, 2, 100
    # wte V*d + wpe S*d + per layer (2 LayerNorms 4d, c_attn 3d*d+3d, c_proj d*d+d, c_fc 4d*d+4d, proj 4d*d+d) + ln_f
    # 2d = 6400 + 2048 + 2*(256 + 12480 + 4160 + 16640 + 16448) + 128 = 108,544; the head is tied to wte
    assert p.parameters == 108_544 == library_count(gpt2_config(), transformers.AutoModelForCausalLM)
    # GEMMs: per layer 2*T*12*d^2 plus the bias adds T*(3d + d + 4d + d); the head 2*T*d*V (no bias)
    per_layer = 2 * T * 12 * d * d + T * 9 * d  # 6,291,456 + 36,864
    assert fwd(p, MM) == L * per_layer + 2 * T * d * V  # 12,656,640 + 819,200
    # causal attention, 4 heads of 16, attention dropout 0.1 (GPT-2's attn_pdrop), for each sequence and layer
    assert fwd(p, SDPA) == L * B * attention(4, S, 16, causal=True, dropout=True)  # 2*2*74,944 = 299,776
    assert p.tokens_per_sample == S and p.linear_in_batch and not p.uncounted_ops
    src = p.source
    assert (src.kind, src.library, src.library_version) == ("hf", "transformers", transformers.__version__)
    assert src.config_sha256 == hashlib.sha256(open(path, "rb").read()).hexdigest()
    assert (src.task, src.architecture) == ("causal-lm", "GPT2LMHeadModel")
    assert p.name == "tiny-gpt2" and p.model_file == f"hf:{path}"
    assert p.made_from().startswith(f"hf:{src.id} (transformers {transformers.__version__}, GPT2LMHeadModel")


def test_bert_masked_lm_counts_full_attention(tmp_path):
    config = transformers.BertConfig(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=256, vocab_size=100,
        max_position_embeddings=S, architectures=["BertForMaskedLM"],
    )  # fmt: skip
    mf = resolve(f"hf:{write(tmp_path, config, 'bert')}")
    p = profile_model(mf, batch_size=B, device="meta")
    assert p.parameters == library_count(config, transformers.AutoModelForMaskedLM) == 113_060
    assert p.source.task == "masked-lm"
    d, i, L, V = 64, 256, 2, 100
    # per layer: q, k, v, o (2*T*d*d + T*d each), FFN 2*T*d*i + T*i and 2*T*i*d + T*d; the MLM head's transform
    # 2*T*d*d + T*d and its decoder 2*T*d*V + T*V
    per_layer = 4 * (2 * T * d * d + T * d) + (2 * T * d * i + T * i) + (2 * T * i * d + T * d)
    assert fwd(p, MM) == L * per_layer + (2 * T * d * d + T * d) + (2 * T * d * V + T * V)
    # bidirectional: every (query, key) pair, attention dropout 0.1
    assert fwd(p, SDPA) == L * B * attention(4, S, 16, causal=False, dropout=True)  # 2*2*288,768


def test_llama_grouped_query_attention(tmp_path):
    config = transformers.LlamaConfig(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
        vocab_size=100, max_position_embeddings=S, architectures=["LlamaForCausalLM"],
    )  # fmt: skip
    mf = resolve(f"hf:{write(tmp_path, config, 'llama')}")
    p = profile_model(mf, batch_size=B, device="meta")
    d, kv, i, L, V = 64, 32, 128, 2, 100  # kv: 2 key-value heads of 16
    # embedding V*d + per layer (q d*d, k and v d*kv, o d*d, gate/up/down 3*d*i, 2 RMSNorms 2d) + norm d + head d*V
    assert p.parameters == V * d + L * (2 * d * d + 2 * d * kv + 3 * d * i + 2 * d) + d + d * V == 86_848
    assert p.parameters == library_count(config, transformers.AutoModelForCausalLM)
    # no biases: 2*T per weight of the layers and the head
    assert fwd(p, MM) == 2 * T * (L * (2 * d * d + 2 * d * kv + 3 * d * i) + d * V)  # 5,160,960 + 819,200
    assert fwd(p, SDPA) == L * B * attention(4, S, 16, causal=True, dropout=False)  # k, v repeated to 4 heads


def test_vit_image_classification_batch_from_image_size(tmp_path):
    config = transformers.ViTConfig(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128, image_size=32,
        patch_size=8, num_labels=10, architectures=["ViTForImageClassification"],
    )  # fmt: skip
    mf = resolve(f"hf:{write(tmp_path, config, 'vit')}")
    p = profile_model(mf, batch_size=B, device="meta")
    assert p.parameters == library_count(config, transformers.AutoModelForImageClassification) == 81_226
    assert p.input_shapes == ["pixel_values: [2, 3, 32, 32] fp32", "labels: [2] int64"]
    assert p.tokens_per_sample is None and p.source.task == "image-cls"
    n, d, i = 17, 64, 128  # (32/8)^2 = 16 patches + the class token
    conv = 2 * 16 * d * 3 * 8 * 8 + 16 * d  # per image: a patch-sized MAC per output element, plus the bias
    assert fwd(p, ("aten.convolution",)) == B * conv  # 788,480
    per_layer = 4 * (2 * B * n * d * d + B * n * d) + (2 * B * n * d * i + B * n * i) + (2 * B * n * i * d + B * n * d)
    head = 2 * B * d * 10 + B * 10  # the classifier on the class token
    assert fwd(p, MM) == 2 * per_layer + head
    assert fwd(p, SDPA) == 2 * B * attention(4, n, 16, causal=False, dropout=False)


def test_task_without_architectures_and_with_task(tmp_path):
    bare = transformers.BertConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                                   vocab_size=50, max_position_embeddings=16)  # fmt: skip
    assert resolve(f"hf:{write(tmp_path, bare, 'bert')}").source.task == "masked-lm"  # encoder: its MLM head
    path = write(tmp_path, gpt2_config(), "g")
    mf = resolve(f"hf:{path}", task="seq-cls", seq_len=16)
    p = profile_model(mf, batch_size=B, device="meta")
    assert p.source.architecture == "GPT2ForSequenceClassification"
    assert p.input_shapes == ["input_ids: [2, 16] int64", "attention_mask: [2, 16] int64", "labels: [2] int64"]
    assert p.tokens_per_sample == 16
    # two labels by default: the score head 2*T*d*2 (no bias), T = 2*16
    assert any(o.module == "score" and o.flops.at(B) == 2 * 32 * 64 * 2 for o in p.ops if o.phase == "forward")
    with pytest.raises(UserError) as err:
        resolve(f"hf:{path}", task="image-cls")
    assert "no image-cls model for model type 'gpt2'" in err.value.message and "causal-lm" in err.value.hint
    with pytest.raises(UserError) as err:
        resolve(f"hf:{path}", seq_len=64)
    assert "longer than the config allows (max_position_embeddings 32)" in err.value.message
    with pytest.raises(UserError) as err:
        resolve(f"hf:{path}", task="summarize")
    assert "unknown --task 'summarize'" in err.value.line()


def remote_config(tmp_path) -> str:
    folder = tmp_path / "remote"
    folder.mkdir()
    data = {"model_type": "advisor-test-net", "auto_map": {"AutoConfig": "cfg.NetConfig",
            "AutoModelForCausalLM": "net.Net"}, "vocab_size": 10, "max_position_embeddings": 8}  # fmt: skip
    (folder / "config.json").write_text(json.dumps(data))
    return str(folder / "config.json")


def test_remote_code_is_refused_without_the_flag(tmp_path):
    with pytest.raises(UserError) as err:
        resolve(f"hf:{remote_config(tmp_path)}")
    assert "needs remote code" in err.value.message and "--trust-remote-code" in err.value.hint


def test_bad_configs_are_one_line(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(UserError) as err:
        resolve(f"hf:{bad}")
    assert "not valid JSON" in err.value.message
    bad.write_text('{"hidden_size": 3}')
    with pytest.raises(UserError) as err:
        resolve(f"hf:{bad}")
    assert "no model_type" in err.value.message
    bad.write_text('{"model_type": "no-such-model-type"}')
    with pytest.raises(UserError) as err:
        resolve(f"hf:{bad}")
    assert "unknown to transformers" in err.value.message
    with pytest.raises(UserError) as err:
        resolve(f"hf:{tmp_path / 'missing' / 'config.json'}")
    assert "no such config file" in err.value.message
    with pytest.raises(UserError) as err:
        resolve(f"hf:{tmp_path}", seq_len=0)
    assert "--seq-len must be at least 1" in err.value.message


def test_missing_transformers_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers now fails, as when absent
    with pytest.raises(UserError) as err:
        resolve(f"hf:{tmp_path}")
    assert err.value.line() == f'hf:{tmp_path} needs transformers, which is not installed; pip install "advisor[hf]"'


# ---------------------------------------------------------------- the Hub, offline (subprocesses: env read at import)


def hub_env(tmp_path, **extra) -> dict:
    return {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_CACHE": str(tmp_path / "hf" / "hub"), **extra}


def test_hub_id_offline_is_one_line(tmp_path):
    r = run_cli("profile", "hf:gpt2", "--device", "meta", env=hub_env(tmp_path, HF_HUB_OFFLINE="1"))
    assert_user_error(r, "hf:gpt2", "not in the local Hugging Face cache", "hf:PATH/config.json")
    # no HF_HUB_OFFLINE, and a Hub that cannot be reached (port 9 on this machine refuses at once): no minute of retries
    env = hub_env(tmp_path, HF_ENDPOINT="http://127.0.0.1:9")
    env.pop("HF_HUB_OFFLINE", None)
    r = run_cli("profile", "hf:gpt2", "--device", "meta", env={**env, "HF_HUB_OFFLINE": ""})
    assert_user_error(r, "cannot reach the Hugging Face Hub (127.0.0.1)", "hf:PATH/config.json")


def test_hub_id_from_the_local_cache(tmp_path):
    # the layout huggingface_hub keeps: models--ORG--NAME/refs/main names a snapshot holding config.json
    repo = tmp_path / "hf" / "hub" / "models--advisor-test--tiny-gpt2"
    snapshot = repo / "snapshots" / "0123abcd"
    gpt2_config().save_pretrained(snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    out = tmp_path / "p.yaml"
    env = hub_env(tmp_path, HF_HUB_OFFLINE="1")
    r = run_cli("profile", "hf:advisor-test/tiny-gpt2", "--device", "meta", "-b", "2", "-o", str(out), env=env)
    assert r.returncode == 0, r.stderr
    from advisor.profiler.schema import load_profile

    p = load_profile(out)
    assert (p.name, p.source.id, p.parameters) == ("tiny-gpt2", "advisor-test/tiny-gpt2", 108_544)
    assert "Traceback" not in r.stderr and "warn" not in r.stderr.lower()


@pytest.mark.skipif(os.name != "posix", reason="the remote code is written as files")
def test_remote_code_runs_with_the_flag(tmp_path):
    folder = tmp_path / "remote"
    path = remote_config(tmp_path)
    (folder / "cfg.py").write_text(
        "from transformers import PretrainedConfig\n\n"
        "class NetConfig(PretrainedConfig):\n"
        "    model_type = 'advisor-test-net'\n\n"
        "    def __init__(self, vocab_size=10, max_position_embeddings=8, **kw):\n"
        "        self.vocab_size, self.max_position_embeddings = vocab_size, max_position_embeddings\n"
        "        super().__init__(**kw)\n"
    )
    (folder / "net.py").write_text(
        "import torch\nfrom transformers import PreTrainedModel\nfrom .cfg import NetConfig\n\n"
        "class Net(PreTrainedModel):\n"
        "    config_class = NetConfig\n\n"
        "    def __init__(self, config):\n"
        "        super().__init__(config)\n"
        "        self.emb = torch.nn.Embedding(config.vocab_size, 4)\n"
        "        self.out = torch.nn.Linear(4, config.vocab_size)\n\n"
        "    def forward(self, input_ids, attention_mask=None, labels=None):\n"
        "        logits = self.out(self.emb(input_ids))\n"
        "        return {'loss': torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())}\n"
    )
    out = tmp_path / "p.yaml"
    args = ("profile", f"hf:{path}", "--device", "meta", "-b", "2", "-o", str(out))
    r = run_cli(*args, "--trust-remote-code", "-f", "json", env=hub_env(tmp_path))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["parameters"] == 10 * 4 + 4 * 10 + 10  # embedding, linear weight and bias
    assert data["tokens_per_sample"] == 8
