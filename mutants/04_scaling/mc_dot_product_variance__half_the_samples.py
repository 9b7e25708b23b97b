"""Draws q and k as the two halves of one batch of n_samples vectors, so only n_samples // 2 pairs are used."""
import math

import torch


def mc_dot_product_variance(d_k, n_samples, generator, sigma=1.0, scaled=False):
    x = sigma * torch.randn(n_samples, d_k, generator=generator)
    q, k = x[: n_samples // 2], x[n_samples // 2:2 * (n_samples // 2)]
    scores = (q * k).sum(dim=-1)
    if scaled:
        scores = scores / math.sqrt(d_k)
    return scores.var().item()
