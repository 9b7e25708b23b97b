"""Online softmax over key blocks, but all T queries at once: a T x block score matrix per step."""
import math

import torch


def tiled_attention(q, k, v, block_size, causal=False):
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    T, S = q.shape[-2], k.shape[-2]
    if causal and T != S:
        raise ValueError("causal attention needs T == S")
    qs = q / math.sqrt(q.shape[-1])
    m = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype)
    l = torch.zeros_like(m)
    a = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for j0 in range(0, S, block_size):
        scores = qs @ k[..., j0:j0 + block_size, :].transpose(-2, -1)
        if causal:
            keys = torch.arange(j0, j0 + scores.shape[-1])
            scores = scores.masked_fill(keys > torch.arange(T).unsqueeze(-1), -math.inf)
        m_new = torch.maximum(m, scores.amax(dim=-1))
        shift = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
        rescale = torch.exp(m - shift)
        p = torch.exp(scores - shift.unsqueeze(-1))
        l = l * rescale + p.sum(dim=-1)
        a = a * rescale.unsqueeze(-1) + p @ v[..., j0:j0 + block_size, :]
        m = m_new
    return a / l.unsqueeze(-1)
