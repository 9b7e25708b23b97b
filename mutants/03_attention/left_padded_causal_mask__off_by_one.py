"""Off by one at the padding boundary: takes the first real token for padding."""
import torch


def left_padded_causal_mask(lengths, T):
    pos = torch.arange(T)
    look_back = pos[:, None] >= pos[None, :]
    real_key = pos[None, :] > (T - lengths)[:, None]
    return (look_back[None] & real_key[:, None, :])[:, None]
