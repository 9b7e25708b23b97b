"""Numbers the positions 1, ..., T instead of 0, ..., T-1."""
import torch


def sinusoidal_encoding(T, d_model, base=10000.0, dtype=torch.float32):
    pos = torch.arange(1, T + 1, dtype=dtype)[:, None]
    freq = base ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)
    angles = pos * freq
    pe = torch.empty(T, d_model, dtype=dtype)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe
