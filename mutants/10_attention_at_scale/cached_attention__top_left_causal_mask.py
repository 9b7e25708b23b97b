"""Uses is_causal=True over the cached keys: the mask is aligned top-left, wrong once anything is cached."""
import torch
import torch.nn.functional as F


def cached_attention(q, k, v, cache):
    if cache is not None:
        k = torch.cat([cache["k"], k], dim=-2)
        v = torch.cat([cache["v"], v], dim=-2)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True), {"k": k, "v": v}
