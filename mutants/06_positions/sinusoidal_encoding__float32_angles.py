"""Always computes the angles in float32 and only converts the result to the requested dtype."""
import torch


def sinusoidal_encoding(T, d_model, base=10000.0, dtype=torch.float32):
    pos = torch.arange(T, dtype=torch.float32)[:, None]
    freq = base ** (-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    angles = pos * freq
    pe = torch.empty(T, d_model)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe.to(dtype)
