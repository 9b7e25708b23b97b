"""Puts the padding on the right: keys j < lengths[b] are the real ones."""
import torch


def left_padded_causal_mask(lengths, T):
    pos = torch.arange(T)
    look_back = pos[:, None] >= pos[None, :]
    real_key = pos[None, :] < lengths[:, None]
    return (look_back[None] & real_key[:, None, :])[:, None]
