"""Keeps a sliding cache that drops the oldest (first) token every step."""
import torch
import torch.nn.functional as F


def cached_attention(q, k, v, cache):
    if cache is not None:
        k = torch.cat([cache["k"][..., 1:, :], k], dim=-2)
        v = torch.cat([cache["v"][..., 1:, :], v], dim=-2)
    t, total = q.shape[-2], k.shape[-2]
    visible = torch.ones(t, total, dtype=torch.bool).tril(diagonal=total - t)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=visible), {"k": k, "v": v}
