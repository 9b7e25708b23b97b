"""Computes the first real position as T - max(lengths, 1), so an empty prompt still sees its last position."""
import torch


def left_padded_causal_mask(lengths, T):
    pos = torch.arange(T)
    real_key = pos[None, :] >= (T - lengths.clamp(min=1))[:, None]
    look_back = pos[:, None] >= pos[None, :]
    return (look_back[None, :, :] & real_key[:, None, :])[:, None]
