"""Sums q * k over the samples axis instead of the d_k coordinates, so the variance is taken over d_k sums of n_samples terms."""
import math

import torch


def mc_dot_product_variance(d_k, n_samples, generator, sigma=1.0, scaled=False):
    q = sigma * torch.randn(n_samples, d_k, generator=generator)
    k = sigma * torch.randn(n_samples, d_k, generator=generator)
    scores = (q * k).sum(dim=0)
    if scaled:
        scores = scores / math.sqrt(d_k)
    return scores.var().item()
