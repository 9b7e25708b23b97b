"""Gives head 1 the gentlest slope 2**-8 and the last head the steepest (slopes in reverse order)."""
import torch


def alibi_bias(T, n_heads):
    slopes = 2.0 ** (-8.0 * torch.arange(n_heads, 0, -1) / n_heads)
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    bias = -slopes[:, None, None] * (i - j).float()
    return bias.masked_fill(j > i, float("-inf"))
