"""Transformer-XL "base" as Lambda's deeplearning-benchmark runs it: the layers of transformer_xl_base.py (16 x 512,
8 heads, tgt_len and mem_len 192), but a full softmax over all 267,735 words instead of the adaptive one.

Why: Lambda's harness (lambdal/deeplearning-benchmark, pytorch/config, PyTorch_transformerxlbase_FP16_PARAMS) calls
DeepLearningExamples' train.py with model flags on the command line and no --config_file. That train.py reads a
YAML config only when both --config and --config_file are given (parse_args: `if config_args.config is not None
and config_args.config_file is not None`), so every other setting keeps its argparse default, and `--adaptive` is
a store_true flag that Lambda does not pass: adaptive softmax off, no cutoffs, and ProjectedAdaptiveLogSoftmax with
no cutoffs is one linear layer over the whole vocabulary (tied to the word embedding) and a log-softmax. DLE's own
runs (run_wt103_base.sh with wt103_base.yaml) set `adaptive: true`; their rows use transformer_xl_base.py.

Per token that is 2 x 512 x 267,735 = 274 MFLOP of logits in the forward pass, about twice the 16 layers'
128 MFLOP, and 267,735 logits written, normalised and read back; Lambda's batches grow with the GPU's memory
(12 sequences on 16 GB, 24 on 24 GB, 104 on 80 GB) as the logits of a 192-token sequence (51 M values) dominate it.
Under apex O2 (DLE's default --amp apex with --fp16) the logits and their log-softmax stay in fp16.
"""

import importlib.util
from pathlib import Path

import torch.nn.functional as F

_spec = importlib.util.spec_from_file_location("_txl_base", Path(__file__).with_name("transformer_xl_base.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

BATCH_SIZE = 24
example_batch, training_step, make_optimizer = _base.example_batch, _base.training_step, _base.make_optimizer


class FullSoftmaxTransformerXL(_base.TransformerXL):
    def loss(self, h, targets):
        """Every token's logits over the whole vocabulary (tied weights, the output bias), log-softmax, NLL."""
        logits = F.linear(h, self.word.weight, self.out_bias)
        return -F.log_softmax(logits, dim=-1).gather(1, targets[:, None]).mean()


def build_model():
    model = FullSoftmaxTransformerXL()
    del model.cluster_weight, model.cluster_bias  # no clusters without cutoffs
    return model
