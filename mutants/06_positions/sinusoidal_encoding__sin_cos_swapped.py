"""Puts the cosine in the even coordinates and the sine in the odd ones."""
import torch


def sinusoidal_encoding(T, d_model, base=10000.0, dtype=torch.float32):
    pos = torch.arange(T, dtype=dtype)[:, None]
    freq = base ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)
    angles = pos * freq
    pe = torch.empty(T, d_model, dtype=dtype)
    pe[:, 0::2] = torch.cos(angles)
    pe[:, 1::2] = torch.sin(angles)
    return pe
