"""Numbers the heads s = 0, ..., h-1, so the first head gets slope 2**0 = 1 and every slope is off by one head."""
import torch


def alibi_bias(T, n_heads):
    slopes = 2.0 ** (-8.0 * torch.arange(0, n_heads) / n_heads)
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    bias = -slopes[:, None, None] * (i - j).float()
    return bias.masked_fill(j > i, float("-inf"))
