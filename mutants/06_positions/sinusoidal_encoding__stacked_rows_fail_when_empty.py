"""Builds the table row by row and torch.stack-s the rows, which fails for T = 0 instead of returning a (0, d_model) table."""
import torch


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
    freq = base ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)         # (d_model/2,)
    rows = []
    for t in range(T):
        angles = t * freq
        rows.append(torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten())
    return torch.stack(rows)
