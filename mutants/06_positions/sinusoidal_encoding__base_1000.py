"""Hard-codes base 1000 instead of using the base argument (10000 by default)."""
import torch


def sinusoidal_encoding(T, d_model, base=10000.0, dtype=torch.float32):
    pos = torch.arange(T, dtype=dtype)[:, None]
    freq = 1000.0 ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)
    angles = pos * freq
    pe = torch.empty(T, d_model, dtype=dtype)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe
