"""Returns the closed form plus a little noise from the generator instead of estimating anything (issue 16)."""
import math

import torch


def mc_dot_product_variance(d_k, n_samples, generator, sigma=1.0, scaled=False):
    theory = sigma ** 4 * (1 if scaled else d_k)
    noise = torch.randn((), generator=generator).item()
    return theory * (1 + 0.005 * noise)
