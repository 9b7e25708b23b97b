"""Accumulates every tile in float64 for accuracy and returns float64 for float32 inputs."""
import math

import torch


def tiled_attention(q, k, v, block_size, causal=False):
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError("block_size must be a positive int")
    T, S = q.shape[-2], k.shape[-2]
    if causal and T != S:
        raise ValueError("causal attention needs T == S")
    scale = 1.0 / math.sqrt(q.shape[-1])
    q, k, v = q.double(), k.double(), v.double()
    out = torch.empty(*q.shape[:-1], v.shape[-1], dtype=torch.float64)
    for i0 in range(0, T, block_size):
        q_tile = q[..., i0:i0 + block_size, :] * scale
        rows = q_tile.shape[-2]
        m = torch.full(q_tile.shape[:-1], -math.inf, dtype=torch.float64)
        l = torch.zeros_like(m)
        a = torch.zeros(*q_tile.shape[:-1], v.shape[-1], dtype=torch.float64)
        for j0 in range(0, S, block_size):
            if causal and j0 > i0 + rows - 1:
                break
            scores = q_tile @ k[..., j0:j0 + block_size, :].transpose(-2, -1)
            if causal:
                query_pos = torch.arange(i0, i0 + rows).unsqueeze(-1)
                key_pos = torch.arange(j0, j0 + scores.shape[-1])
                scores = scores.masked_fill(key_pos > query_pos, -math.inf)
            m_new = torch.maximum(m, scores.amax(dim=-1))
            rescale = torch.exp(m - m_new)
            p = torch.exp(scores - m_new.unsqueeze(-1))
            l = l * rescale + p.sum(dim=-1)
            a = a * rescale.unsqueeze(-1) + p @ v[..., j0:j0 + block_size, :]
            m = m_new
        out[..., i0:i0 + rows, :] = a / l.unsqueeze(-1)
    return out
