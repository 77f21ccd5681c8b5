"""What a GPU run would do, emulated on the meta device (which has no autocast and no fused attention).

- Attention: on meta, `F.scaled_dot_product_attention` would take the math path (materialised scores),
  which no GPU training run uses. We route it to the fused kernel CUDA would pick: flash attention for
  16-bit inputs without a mask, memory-efficient attention otherwise (GQA by repeating k and v).
- Autocast: the CUDA autocast op lists (torch.amp docs, "CUDA Ops that can autocast"), applied above
  autograd so that backward sees the same casts; leaf weights are cast once per forward, as autocast's
  weight cache does.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

aten = torch.ops.aten
T = torch.Tensor
LOWER = {
    F.linear,
    torch.matmul,
    T.matmul,
    T.__matmul__,
    T.__rmatmul__,
    torch.mm,
    T.mm,
    torch.bmm,
    T.bmm,
    torch.addmm,
    T.addmm,
    torch.baddbmm,
    T.baddbmm,
    torch.addbmm,
    torch.mv,
    T.mv,
    torch.addmv,
    torch.chain_matmul,
    F.conv1d,
    F.conv2d,
    F.conv3d,
    F.conv_transpose1d,
    F.conv_transpose2d,
    F.conv_transpose3d,
    F.prelu,
    F.scaled_dot_product_attention,
}
FP32 = {
    F.softmax,
    torch.softmax,
    T.softmax,
    F.log_softmax,
    torch.log_softmax,
    T.log_softmax,
    F.layer_norm,
    F.group_norm,
    F.cross_entropy,
    F.nll_loss,
    F.mse_loss,
    F.l1_loss,
    F.smooth_l1_loss,
    F.kl_div,
    F.binary_cross_entropy_with_logits,
    F.softplus,
    F.normalize,
    torch.exp,
    T.exp,
    torch.log,
    T.log,
    torch.pow,
    T.pow,
    T.__pow__,
    torch.sum,
    T.sum,
    torch.cumsum,
    T.cumsum,
    torch.prod,
    torch.rsqrt,
    T.rsqrt,
    torch.norm,
    T.norm,
    torch.reciprocal,
    torch.log1p,
    torch.expm1,
    torch.cdist,
}


def fused_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    if attn_mask is None and q.dtype in (torch.float16, torch.bfloat16):  # flash reads grouped k, v as they are
        return aten._scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, False, scale=scale)[0]
    if enable_gqa and k.shape[-3] != q.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(rep, dim=-3), v.repeat_interleave(rep, dim=-3)
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        attn_mask = torch.zeros(attn_mask.shape, dtype=q.dtype, device=q.device).masked_fill(~attn_mask, float("-inf"))
    if attn_mask is not None:
        attn_mask = attn_mask.expand(*q.shape[:-2], q.shape[-2], k.shape[-2])
    grad = q.requires_grad or k.requires_grad or v.requires_grad
    return aten._scaled_dot_product_efficient_attention(
        q, k, v, attn_mask, grad, dropout_p, is_causal and attn_mask is None, scale=scale
    )[0]


def fused_dropout(x, p=0.5, training=True, inplace=False):
    """Dropout as CUDA runs it: one native_dropout kernel (read the input, write the output and a bool mask).
    On meta, torch's dropout takes its CPU path instead (empty_like, bernoulli_, div_, mul: four kernels)."""
    if not training or not p or inplace or not x.is_floating_point():
        return F.dropout(x, p, training, inplace)
    return aten.native_dropout(x, p, True)[0]


class MetaMode(TorchFunctionMode):
    """Around the forward pass on meta: fused attention, and autocast to `low` (None: no autocast)."""

    def __init__(self, low: torch.dtype | None):
        super().__init__()
        self.low = low
        self._cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def _cast(self, x, dtype):
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != dtype and x.dtype != torch.float64:
            if x.is_leaf and x.requires_grad:  # weights: cast once per forward, like autocast's cache
                hit = self._cache.get(id(x))
                if hit is None or hit[0] is not x:
                    hit = self._cache[id(x)] = (x, x.to(dtype))
                return hit[1]
            return x.to(dtype)
        if isinstance(x, (list, tuple)):
            return type(x)(self._cast(y, dtype) for y in x)
        return x

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.low is not None:
            if func in LOWER:
                args = tuple(self._cast(a, self.low) for a in args)
                kwargs = {k: self._cast(v, self.low) for k, v in kwargs.items()}
            elif func in FP32:
                args = tuple(self._cast(a, torch.float32) for a in args)
                kwargs = {k: self._cast(v, torch.float32) if k != "dtype" else v for k, v in kwargs.items()}
        if func is F.scaled_dot_product_attention:
            return fused_attention(*args, **kwargs)
        if func is F.dropout:
            return fused_dropout(*args, **kwargs)
        return func(*args, **kwargs)

    def __exit__(self, *exc):
        self._cache.clear()
        return super().__exit__(*exc)
