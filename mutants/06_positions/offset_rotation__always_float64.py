"""Computes in float64 with math.cos/math.sin and ignores the dtype argument, so the float32 default comes back float64."""
import torch


def offset_rotation(k, d_model, base=10000.0, dtype=torch.float32):
    """The matrix M(k) that moves a sinusoidal encoding k positions along: PE(t + k) = M(k) @ PE(t).

    Args:
        k: the offset, any real number (int or float; negative moves backwards).
        d_model: a positive even int; the encoding uses pairs (2i, 2i+1) = (sin, cos) with frequency
            w_i = base ** (-2i / d_model).
        base: as in sinusoidal_encoding.
        dtype: floating dtype of the result and of the computation.
    Returns:
        A new (d_model, d_model) tensor, zero except for the 2x2 blocks on the diagonal:
            M[2i, 2i]   =  cos(k w_i)    M[2i, 2i+1]   = sin(k w_i)
            M[2i+1, 2i] = -sin(k w_i)    M[2i+1, 2i+1] = cos(k w_i)
        M(0) is the identity; every M(k) is orthogonal with determinant +1.
    """
    dtype = torch.float64
    freq = base ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)
    angle = k * freq
    cos, sin = torch.cos(angle), torch.sin(angle)
    M = torch.zeros(d_model, d_model, dtype=dtype)
    even = torch.arange(0, d_model, 2)
    M[even, even] = cos
    M[even, even + 1] = sin
    M[even + 1, even] = -sin
    M[even + 1, even + 1] = cos
    return M
