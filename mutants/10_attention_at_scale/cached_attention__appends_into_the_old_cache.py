"""Stores the grown keys and values back into the dict it was given and returns that same dict."""
import torch
import torch.nn.functional as F


def cached_attention(q, k, v, cache):
    if cache is None:
        cache = {"k": k, "v": v}
    else:
        cache["k"] = torch.cat([cache["k"], k], dim=-2)
        cache["v"] = torch.cat([cache["v"], v], dim=-2)
    t, total = q.shape[-2], cache["k"].shape[-2]
    visible = torch.ones(t, total, dtype=torch.bool).tril(diagonal=total - t)
    return F.scaled_dot_product_attention(q, cache["k"], cache["v"], attn_mask=visible), cache
