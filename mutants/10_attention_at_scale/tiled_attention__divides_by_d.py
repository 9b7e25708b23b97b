"""Scales the scores by 1/d instead of 1/sqrt(d)."""
import math

import torch


def tiled_attention(q, k, v, block_size, causal=False):
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    T, S = q.shape[-2], k.shape[-2]
    if causal and T != S:
        raise ValueError(f"causal attention needs as many queries as keys, got T = {T} and S = {S}")
    scale = 1.0 / q.shape[-1]
    out = torch.empty(*q.shape[:-1], v.shape[-1], dtype=q.dtype, device=q.device)
    for i0 in range(0, T, block_size):
        q_tile = q[..., i0:i0 + block_size, :] * scale
        rows = q_tile.shape[-2]
        m = torch.full(q_tile.shape[:-1], -math.inf, dtype=q.dtype, device=q.device)
        l = torch.zeros_like(m)
        a = torch.zeros(*q_tile.shape[:-1], v.shape[-1], dtype=q.dtype, device=q.device)
        for j0 in range(0, S, block_size):
            if causal and j0 > i0 + rows - 1:
                break                                   # this key block and all later ones are in the future
            scores = q_tile @ k[..., j0:j0 + block_size, :].transpose(-2, -1)
            if causal:
                query_pos = torch.arange(i0, i0 + rows, device=q.device).unsqueeze(-1)
                key_pos = torch.arange(j0, j0 + scores.shape[-1], device=q.device)
                scores = scores.masked_fill(key_pos > query_pos, -math.inf)
            m_new = torch.maximum(m, scores.amax(dim=-1))   # finite: every query sees key 0 in the first block
            rescale = torch.exp(m - m_new)
            p = torch.exp(scores - m_new.unsqueeze(-1))
            l = l * rescale + p.sum(dim=-1)
            a = a * rescale.unsqueeze(-1) + p @ v[..., j0:j0 + block_size, :]
            m = m_new
        out[..., i0:i0 + rows, :] = a / l.unsqueeze(-1)
    return out