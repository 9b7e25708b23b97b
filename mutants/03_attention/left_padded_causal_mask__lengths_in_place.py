"""Turns lengths into the first real position in place (lengths.neg_().add_(T)), changing the caller's tensor."""
import torch


def left_padded_causal_mask(lengths, T):
    start = lengths.neg_().add_(T)                                   # T - lengths, in the caller's tensor
    pos = torch.arange(T)
    real_key = pos[None, :] >= start[:, None]
    look_back = pos[:, None] >= pos[None, :]
    return (look_back[None, :, :] & real_key[:, None, :])[:, None]
