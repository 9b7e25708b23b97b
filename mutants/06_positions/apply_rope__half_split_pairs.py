"""Rotates the half-split pairs (i, i + d/2) (GPT-NeoX layout) instead of the adjacent pairs (2i, 2i+1) the docstring fixes."""
import torch


def apply_rope(x, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = torch.arange(T, dtype=torch.float64)[:, None] * theta
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    first, second = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)
