"""`hf:ID` and `hf:PATH/config.json`: a Hugging Face transformers model built from its configuration alone.

The config is read (from a local file or folder, the local Hub cache, or the Hub: config.json only, never weights),
then `AutoModelFor<task>.from_config` builds the model inside the profiler's device context, so on `--device meta`
nothing is allocated. The task (the head, hence the loss) comes from `--task`, else from the config's
`architectures`, else from the first task whose auto-mapping knows the model type. The batch is made from the
config: token ids below `vocab_size` at `--seq-len` or the config's maximum positions for text, `pixel_values` at
its `image_size` for vision, and labels, so that the model computes its own loss as in training.

A config whose model type transformers does not ship (its `auto_map` points at Python files of the repository)
is refused unless --trust-remote-code is given: that code would run with the user's permissions.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from urllib.parse import urlparse

from advisor.errors import UserError
from advisor.profiler.schema import ModelSource
from advisor.vocab import HF_TASKS, check_choice

# task -> (auto class, the name of its mapping of model types to classes in transformers.models.auto.modeling_auto)
AUTO = {
    "causal-lm": ("AutoModelForCausalLM", "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES"),
    "masked-lm": ("AutoModelForMaskedLM", "MODEL_FOR_MASKED_LM_MAPPING_NAMES"),
    "seq-cls": ("AutoModelForSequenceClassification", "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES"),
    "image-cls": ("AutoModelForImageClassification", "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES"),
}
# Without architectures: an encoder-only type (BERT) has a masked-LM head, a decoder (GPT-2, Llama) none, so
# masked-lm is tried before causal-lm; vision types have neither.
FALLBACK_ORDER = ("masked-lm", "causal-lm", "image-cls", "seq-cls")
POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx")
DEFAULT_IMAGE_SIZE = 224
CONNECT_TIMEOUT_S = 5.0
META_ATTENTION = "advisor_meta"  # a name without "sdpa": transformers checks those against _supports_sdpa
OFFLINE_HINT = "download its config.json and give hf:PATH/config.json (no weights are needed)"


def resolve_hf(ref: str, *, task: str | None, seq_len: int | None, trust_remote_code: bool):
    from advisor.profiler.sources import Resolved, require, version_of

    check_choice(task, HF_TASKS, "--task")
    if seq_len is not None and seq_len < 1:
        raise UserError(f"--seq-len must be at least 1, got {seq_len}")
    if not ref:
        raise UserError("hf: needs a model id or a config path", "e.g. hf:gpt2 or hf:./my-model/config.json")
    transformers = require("transformers", "hf", f"hf:{ref}")
    # transformers warns about config details on every build (an unset loss_type, token ids of a test config);
    # its errors still show, and advisor's own notes say what was built
    transformers.logging.set_verbosity_error()
    path, hub_id = config_file(ref)
    from advisor.io import read_bytes

    raw = read_bytes(path, "config.json")  # a regular file within the size limit
    data = _parse(raw, path)
    model_type = data["model_type"]
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    remote = bool(data.get("auto_map")) and model_type not in CONFIG_MAPPING_NAMES
    if remote and not trust_remote_code:
        raise UserError(
            f"hf:{ref} needs remote code: model type {model_type!r} is not in transformers "
            f"{transformers.__version__}, and its config maps it to Python files of the repository",
            "add --trust-remote-code if you trust that code (it runs with your permissions)",
        )
    if not remote and model_type not in CONFIG_MAPPING_NAMES:
        raise UserError(
            f"hf:{ref}: model type {model_type!r} is unknown to transformers {transformers.__version__}",
            "upgrade transformers (pip install -U transformers), or check the config",
        )
    # remote code lives beside config.json (in the folder, or in the Hub repository, fetched by transformers)
    where = (hub_id or str(path.parent)) if remote else str(path)
    config = _config(transformers, where, ref, trust_remote_code)
    task, why = _task(config, data, task, remote)
    auto_name, _ = AUTO[task]
    auto = getattr(transformers, auto_name)
    config.use_cache = False  # training: no key/value cache
    notes = [f"hf:{ref}: task {task} ({why}), built from the config without weights"]
    if task == "seq-cls" and getattr(config, "pad_token_id", None) is None:
        # sequence classification pools at the last non-pad token and refuses batches above 1 without one
        eos = getattr(config, "eos_token_id", None)
        config.pad_token_id = eos[0] if isinstance(eos, list) else (eos if eos is not None else 0)
    if task == "image-cls":
        example_batch, inputs = _image_batch(config)
    else:
        example_batch, inputs = _text_batch(config, task, seq_len)
    notes.append(f"hf:{ref}: inputs {inputs}")

    def build_model():
        import torch

        extra, asked = {}, getattr(config, "_attn_implementation", None)
        if torch.get_default_device().type == "meta" and asked in (None, "sdpa"):
            extra["attn_implementation"] = meta_attention()
        return auto.from_config(config, trust_remote_code=trust_remote_code, **extra)

    source = ModelSource(
        kind="hf",
        id=ref if hub_id else str(path.resolve()),
        library="transformers",
        library_version=version_of(transformers),
        config_sha256=hashlib.sha256(raw).hexdigest(),
        architecture=_architecture(config, task),
        task=task,
        inputs=inputs,
    )
    name = hub_id.rsplit("/", 1)[-1] if hub_id else (path.parent.name if path.name == "config.json" else path.stem)
    return Resolved(
        path=path,
        sha256=source.config_sha256,
        build_model=build_model,
        example_batch=example_batch,
        training_step=None,  # the model computes its loss from the labels in the batch
        make_optimizer=None,
        source=source,
        name=name or "hf_model",
        label=f"hf:{ref}",
        notes=notes,
    )


def meta_attention() -> str:
    """The name of transformers' own SDPA attention, registered without a mask function.

    On meta, transformers' mask preparation reads tensor values (is the batch packed? is the padding mask all
    ones?), which meta tensors do not have. For a name with no mask function it prepares no mask at all, and its SDPA
    function then passes is_causal from the attention module, which is what it does itself for a batch without
    padding or packing, such as advisor's. The ops are the same; only the value checks are skipped."""
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    AttentionInterface.register(META_ATTENTION, sdpa_attention_forward)
    return META_ATTENTION


# ---------------------------------------------------------------- finding config.json


def config_file(ref: str) -> tuple[Path, str | None]:
    """(a local config.json, the Hub id or None). A local file or folder wins; then the local Hub cache; then the
    Hub itself, unless HF_HUB_OFFLINE is set or the Hub cannot be reached (one line, no retry loop)."""
    local = Path(ref).expanduser()
    if local.is_dir():
        local = local / "config.json"
        if not local.is_file():
            raise UserError(f"hf:{ref}: the folder has no config.json", "give hf:PATH/config.json")
        return local, None
    if local.is_file():
        return local, None
    if ref.endswith(".json") or ref.startswith((".", "/", "~")) or ref.count("/") > 1:
        raise UserError(f"hf:{ref}: no such config file", "check the path (hf:PATH/config.json or hf:ORG/NAME)")
    from huggingface_hub import constants, hf_hub_download, try_to_load_from_cache

    cached = try_to_load_from_cache(ref, "config.json")
    if isinstance(cached, str):
        return Path(cached), ref
    if constants.HF_HUB_OFFLINE:
        raise UserError(
            f"hf:{ref}: config.json is not in the local Hugging Face cache and HF_HUB_OFFLINE is set", OFFLINE_HINT
        )
    _reachable(ref, constants.ENDPOINT)
    try:
        return Path(hf_hub_download(ref, "config.json")), ref
    except Exception as exc:  # noqa: BLE001 - the Hub's errors: not found, gated, network
        kind = type(exc).__name__
        if kind in ("RepositoryNotFoundError", "GatedRepoError", "EntryNotFoundError", "RemoteEntryNotFoundError"):
            reason = {
                "RepositoryNotFoundError": "no such model on the Hub (or it is private: log in with hf auth login)",
                "GatedRepoError": "the repository is gated: accept its terms on the Hub and log in (hf auth login)",
            }.get(kind, "the repository has no config.json")
            raise UserError(f"hf:{ref}: {reason}", OFFLINE_HINT) from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else kind
        raise UserError(f"hf:{ref}: cannot fetch config.json from the Hub ({first})", OFFLINE_HINT) from None


def _reachable(ref: str, endpoint: str) -> None:
    """One quick connection to the Hub before asking it for a file: offline, huggingface_hub retries for a minute."""
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return  # a proxy resolves the name, not us
    import socket

    url = urlparse(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError:
        raise UserError(
            f"hf:{ref}: cannot reach the Hugging Face Hub ({url.hostname}) to fetch config.json, and it is not "
            "in the local cache",
            OFFLINE_HINT,
        ) from None


def _parse(raw: bytes, path: Path) -> dict:
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise UserError(f"{path}: not valid JSON ({exc})", "give a Hugging Face config.json") from None
    if not isinstance(data, dict) or not isinstance(data.get("model_type"), str):
        raise UserError(f"{path}: not a Hugging Face model config (no model_type)", "give a model's config.json")
    return data


def _config(transformers, where: str, ref: str, trust_remote_code: bool):
    try:
        return transformers.AutoConfig.from_pretrained(where, trust_remote_code=trust_remote_code)
    except Exception as exc:  # noqa: BLE001 - transformers' own checks of the config
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"hf:{ref}: transformers cannot read this config: {first}", "check the config") from None


# ---------------------------------------------------------------- the task and the batch


def _names(task: str) -> dict[str, set[str]]:
    """model type -> the class names transformers builds for `task`."""
    from transformers.models.auto import modeling_auto

    mapping = getattr(modeling_auto, AUTO[task][1])
    return {k: set(v) if isinstance(v, (tuple, list)) else {v} for k, v in mapping.items()}


def _task(config, data: dict, asked: str | None, remote: bool) -> tuple[str, str]:
    model_type = config.model_type
    if remote:
        auto_map = data.get("auto_map") or {}
        offered = [t for t in HF_TASKS if AUTO[t][0] in auto_map]
        if asked is not None and asked not in offered:
            raise UserError(
                f"the remote code of this model has no {AUTO[asked][0]}",
                f"use --task {offered[0]}" if offered else "it offers none of advisor's tasks",
            )
        if not offered:
            raise UserError(
                f"the remote code of this model offers none of {', '.join(a for a, _ in AUTO.values())}",
                "write a model file for it instead",
            )
        return (asked, "--task") if asked else (offered[0], f"auto_map {AUTO[offered[0]][0]}")
    if asked is not None:
        if model_type not in _names(asked):
            have = [t for t in HF_TASKS if model_type in _names(t)]
            raise UserError(
                f"transformers has no {asked} model for model type {model_type!r}",
                f"use --task {' or '.join(have)}" if have else "write a model file for it instead",
            )
        return asked, "--task"
    archs = list(getattr(config, "architectures", None) or [])
    for arch in archs:
        for t in HF_TASKS:
            if arch in _names(t).get(model_type, set()):
                return t, f"architectures: {arch}"
    for t in FALLBACK_ORDER:
        if model_type in _names(t):
            return t, f"the first task transformers has for {model_type}; --task to choose"
    raise UserError(
        f"transformers has none of {', '.join(HF_TASKS)} for model type {model_type!r}",
        "write a model file for it instead",
    )


def _architecture(config, task: str) -> str | None:
    names = _names(task).get(config.model_type)
    return sorted(names)[0] if names else None


def _text_batch(config, task: str, seq_len: int | None):
    vocab = getattr(config, "vocab_size", None)
    if not isinstance(vocab, int) or vocab < 1:
        raise UserError(f"the config of model type {config.model_type!r} has no vocab_size", "check the config")
    limit, key = None, None
    for k in POSITION_KEYS:
        v = getattr(config, k, None)
        if isinstance(v, int) and v > 0:
            limit, key = v, k
            break
    if seq_len is None and limit is None:
        raise UserError(f"the config names no maximum sequence length ({', '.join(POSITION_KEYS)})", "give --seq-len")
    if seq_len is not None and limit is not None and seq_len > limit:
        raise UserError(f"--seq-len {seq_len} is longer than the config allows ({key} {limit})", f"use {limit} or less")
    seq = seq_len or limit
    labels = getattr(config, "num_labels", 2)

    def example_batch(batch_size: int):
        import torch

        # as a data collator makes it: every token real (no padding), so the mask is all ones
        ids, mask = torch.randint(0, vocab, (batch_size, seq)), torch.ones(batch_size, seq, dtype=torch.long)
        if task == "seq-cls":
            return {"input_ids": ids, "attention_mask": mask, "labels": torch.randint(0, labels, (batch_size,))}
        return {"input_ids": ids, "attention_mask": mask, "labels": torch.randint(0, vocab, (batch_size, seq))}

    where = "--seq-len" if seq_len else key
    extra = f", {labels} labels" if task == "seq-cls" else ""
    return example_batch, f"token ids [batch, {seq}] (sequence from {where}, no padding), vocabulary {vocab}{extra}"


def _image_batch(config):
    size = getattr(config, "image_size", None)
    where = "image_size"
    if isinstance(size, (list, tuple)) and len(size) == 2:
        h, w = int(size[0]), int(size[1])
    elif isinstance(size, int) and size > 0:
        h = w = size
    else:
        h = w = DEFAULT_IMAGE_SIZE
        where = f"the config has no image_size: {DEFAULT_IMAGE_SIZE}"
    channels = getattr(config, "num_channels", 3) or 3
    labels = getattr(config, "num_labels", 2)

    def example_batch(batch_size: int):
        import torch

        return {
            "pixel_values": torch.randn(batch_size, channels, h, w),
            "labels": torch.randint(0, labels, (batch_size,)),
        }

    return example_batch, f"pixel_values [batch, {channels}, {h}, {w}] ({where}), {labels} labels"
