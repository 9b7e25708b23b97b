"""Computes the whole score matrix and an ordinary softmax: right values, T x T memory."""
import math

import torch


def tiled_attention(q, k, v, block_size, causal=False):
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    T, S = q.shape[-2], k.shape[-2]
    if causal and T != S:
        raise ValueError("causal attention needs T == S")
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        scores = scores.masked_fill(torch.ones(T, S, dtype=torch.bool).triu(1), -math.inf)
    return torch.softmax(scores, dim=-1) @ v
