"""Draws from the global random state instead of the generator argument, so a seed does not reproduce the estimate."""
import math

import torch


def mc_dot_product_variance(d_k, n_samples, generator, sigma=1.0, scaled=False):
    q = sigma * torch.randn(n_samples, d_k)
    k = sigma * torch.randn(n_samples, d_k)
    scores = (q * k).sum(dim=-1)
    if scaled:
        scores = scores / math.sqrt(d_k)
    return scores.var().item()
