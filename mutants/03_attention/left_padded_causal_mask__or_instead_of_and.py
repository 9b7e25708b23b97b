"""Combines the causal and padding conditions with OR instead of AND."""
import torch


def left_padded_causal_mask(lengths, T):
    pos = torch.arange(T)
    look_back = pos[:, None] >= pos[None, :]
    real_key = pos[None, :] >= (T - lengths)[:, None]
    return (look_back[None] | real_key[:, None, :])[:, None]
