"""Adds +m_s (i - j), rewarding distant keys instead of penalising them."""
import torch


def alibi_bias(T, n_heads):
    slopes = 2.0 ** (-8.0 * torch.arange(1, n_heads + 1) / n_heads)
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    bias = slopes[:, None, None] * (i - j).float()
    return bias.masked_fill(j > i, float("-inf"))
