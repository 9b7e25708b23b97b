"""Returns -m_s |i - j| everywhere and forgets to mask the future keys (j > i)."""
import torch


def alibi_bias(T, n_heads):
    slopes = 2.0 ** (-8.0 * torch.arange(1, n_heads + 1) / n_heads)
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    return -slopes[:, None, None] * (i - j).abs().float()
