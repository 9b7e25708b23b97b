"""Masks the padded queries (rows) instead of the padded keys (columns)."""
import torch


def left_padded_causal_mask(lengths, T):
    pos = torch.arange(T)
    look_back = pos[:, None] >= pos[None, :]
    real = pos[None, :] >= (T - lengths)[:, None]
    return (look_back[None] & real[:, :, None])[:, None]
