"""Multiplies the standard normals by sigma**2 (the variance) instead of sigma (the standard deviation)."""
import math

import torch


def mc_dot_product_variance(d_k, n_samples, generator, sigma=1.0, scaled=False):
    q = sigma ** 2 * torch.randn(n_samples, d_k, generator=generator)
    k = sigma ** 2 * torch.randn(n_samples, d_k, generator=generator)
    scores = (q * k).sum(dim=-1)
    if scaled:
        scores = scores / math.sqrt(d_k)
    return scores.var().item()
