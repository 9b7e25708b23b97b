"""Rotates by the frequency w_i itself, forgetting to multiply by the offset k."""
import torch


def offset_rotation(k, d_model, base=10000.0, dtype=torch.float32):
    angle = base ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    M = torch.zeros(d_model, d_model, dtype=dtype)
    even = torch.arange(0, d_model, 2)
    M[even, even] = cos
    M[even, even + 1] = sin
    M[even + 1, even] = -sin
    M[even + 1, even + 1] = cos
    return M
