"""Rotates by -t * theta_i (clockwise) instead of +t * theta_i."""
import torch


def apply_rope(x, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = torch.arange(T, dtype=torch.float64)[:, None] * theta
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack([x_even * cos + x_odd * sin, -x_even * sin + x_odd * cos], dim=-1)
    return rotated.flatten(-2)
