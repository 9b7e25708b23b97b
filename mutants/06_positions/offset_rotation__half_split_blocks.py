"""Pairs coordinate i with coordinate i + d/2 instead of the adjacent (2i, 2i+1) pairs of the encoding."""
import torch


def offset_rotation(k, d_model, base=10000.0, dtype=torch.float32):
    freq = base ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)
    angle = k * freq
    cos, sin = torch.cos(angle), torch.sin(angle)
    M = torch.zeros(d_model, d_model, dtype=dtype)
    first = torch.arange(d_model // 2)
    second = first + d_model // 2
    M[first, first] = cos
    M[first, second] = sin
    M[second, first] = -sin
    M[second, second] = cos
    return M
