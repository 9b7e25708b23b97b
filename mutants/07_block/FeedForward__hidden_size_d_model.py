"""Uses d_model as the default hidden width instead of 4 * d_model."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class FeedForward(nn.Module):
    """The position-wise feed-forward network: fc2(activation(fc1(x))).

    FeedForward(d_model, d_ff=None, activation="gelu")
      d_ff: hidden width; None means 4 * d_model.
      activation: "relu" (max(0, z)) or "gelu" (the EXACT GELU z * Phi(z) = z/2 (1 + erf(z / sqrt 2)),
        nn.GELU()'s default, not the tanh approximation). Any other value raises ValueError.
      Parameters (the tests load weights by these names):
        fc1: nn.Linear(d_model, d_ff)  (weight (d_ff, d_model), bias (d_ff,));
        fc2: nn.Linear(d_ff, d_model)  (weight (d_model, d_ff), bias (d_model,)).
      No other parameters, no dropout.

    forward(x):
        x: floating tensor of shape (..., d_model) (any leading axes), float32 or float64.
        Returns a new tensor of the same shape and dtype: fc2(phi(fc1(x))), applied to every position
        separately. x is not modified. Differentiable.
    """

    def __init__(self, d_model, d_ff=None, activation="gelu"):
        super().__init__()
        if activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu', not {activation!r}")
        d_ff = d_model if d_ff is None else d_ff
        self.activation = activation
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        hidden = self.fc1(x)
        hidden = F.relu(hidden) if self.activation == "relu" else F.gelu(hidden)   # exact (erf) GELU
        return self.fc2(hidden)
