"""Normalises each sequence as a whole (over tokens and features) instead of each token."""
import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    """Layer normalisation over the last axis, a drop-in replacement for nn.LayerNorm(d_model, eps=eps).

    LayerNorm(d_model, eps=1e-5)
      Parameters (the same names and shapes as nn.LayerNorm, so one state_dict loads into both):
        weight: nn.Parameter of shape (d_model,), initialised to ones  (gamma, the per-feature scale);
        bias:   nn.Parameter of shape (d_model,), initialised to zeros (beta, the per-feature shift).
      No other parameters. eps is a plain float attribute (not a parameter).

    forward(x):
        x: floating tensor of shape (..., d_model), any number of leading axes (also none), float32 or
           float64. Each vector x[..., :] is normalised on its own:
               mu = mean over the last axis, var = mean of (x - mu)^2 over the last axis (the BIASED
               variance: divide by d_model, not d_model - 1),
               out = (x - mu) / sqrt(var + eps) * weight + bias   (eps INSIDE the square root).
        Returns a new tensor of x's shape and dtype; x is not modified. A constant vector (var = 0)
        gives exactly `bias` (no NaN); d_model = 1 is allowed (the output is `bias`). Accurate when the
        mean is large compared to the spread (e.g. 1e4 + N(0, 1) in float32): subtract the mean before
        squaring. Differentiable with respect to x, weight and bias.
    """

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        dims = tuple(range(1, x.dim())) if x.dim() > 1 else (-1,)
        mu = x.mean(dim=dims, keepdim=True)
        centred = x - mu
        var = (centred * centred).mean(dim=dims, keepdim=True)         # biased: divide by d_model
        return centred / torch.sqrt(var + self.eps) * self.weight + self.bias
