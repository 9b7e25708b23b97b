"""Takes the positions from the first dimension of x instead of the second-to-last one."""
import torch


def apply_rope(x, base=10000.0):
    T, d = x.shape[0], x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = torch.arange(T, dtype=torch.float64)[:, None] * theta
    shape = (T,) + (1,) * (x.dim() - 2) + (d // 2,)
    cos, sin = angles.cos().to(x.dtype).reshape(shape), angles.sin().to(x.dtype).reshape(shape)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack([x_even * cos - x_odd * sin, x_even * sin + x_odd * cos], dim=-1)
    return rotated.flatten(-2)
