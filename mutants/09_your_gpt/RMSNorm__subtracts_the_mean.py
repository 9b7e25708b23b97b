"""Centres each vector first (LayerNorm without the shift), which RMSNorm does not do."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    """Root-mean-square normalisation over the last axis, as in LLaMA.

    RMSNorm(d, eps=1e-6)
      Parameters: weight, an nn.Parameter of shape (d,) initialised to ones (the gain g). No other
      parameters (no shift); eps is a plain float attribute.

    forward(x):
        x: floating tensor of shape (..., d), any number of leading axes (also none), float32 or float64.
        Returns a new tensor of x's shape and dtype (x is not modified):
            out = x / sqrt(mean(x ** 2 over the last axis) + eps) * weight     (eps INSIDE the square root;
        the mean is NOT subtracted). A zero vector gives zeros (no NaN). Differentiable in x and weight.
    """

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        x = x - x.mean(dim=-1, keepdim=True)
        mean_square = (x * x).mean(dim=-1, keepdim=True)
        return x * torch.rsqrt(mean_square + self.eps) * self.weight
