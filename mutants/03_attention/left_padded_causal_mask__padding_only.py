"""Forgets the causal part: only the padding is masked."""
import torch


def left_padded_causal_mask(lengths, T):
    pos = torch.arange(T)
    real_key = pos[None, :] >= (T - lengths)[:, None]
    return real_key[:, None, None, :].expand(-1, 1, T, -1)
