"""Uses the upper triangle (j >= i) with the padding."""
import torch


def left_padded_causal_mask(lengths, T):
    pos = torch.arange(T)
    look = pos[:, None] <= pos[None, :]
    real_key = pos[None, :] >= (T - lengths)[:, None]
    return (look[None] & real_key[:, None, :])[:, None]
