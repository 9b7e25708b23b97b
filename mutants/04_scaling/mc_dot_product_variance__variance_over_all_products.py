"""Takes the variance of the individual products q_i k_i over the whole (n_samples, d_k) array, skipping the sum."""
import math

import torch


def mc_dot_product_variance(d_k, n_samples, generator, sigma=1.0, scaled=False):
    q = sigma * torch.randn(n_samples, d_k, generator=generator)
    k = sigma * torch.randn(n_samples, d_k, generator=generator)
    products = q * k
    if scaled:
        products = products / math.sqrt(d_k)
    return products.var().item()
