"""Draws one vector and uses it as both q and k, so the score is |q|^2 (variance 2 d_k sigma^4, mean d_k sigma^2)."""
import math

import torch


def mc_dot_product_variance(d_k, n_samples, generator, sigma=1.0, scaled=False):
    q = sigma * torch.randn(n_samples, d_k, generator=generator)
    scores = (q * q).sum(dim=-1)
    if scaled:
        scores = scores / math.sqrt(d_k)
    return scores.var().item()
