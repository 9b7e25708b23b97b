"""Uses nn.Linear with its default biases."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    """The gated feed-forward network of LLaMA: w2(silu(w1(x)) * w3(x)).

    SwiGLU(d_model, d_ff)
      Parameters (these names; the tests load weights by them), all without bias:
        w1: nn.Linear(d_model, d_ff, bias=False)  (the gate, passed through SiLU);
        w3: nn.Linear(d_model, d_ff, bias=False)  (the value);
        w2: nn.Linear(d_ff, d_model)  (back to the width d_model).
      3 * d_model * d_ff parameters in all.

    forward(x):
        x: floating tensor of shape (..., d_model), float32 or float64.
        Returns a new tensor of the same shape and dtype: w2(silu(w1(x)) * w3(x)), with
        silu(z) = z * sigmoid(z), applied to every position separately. x is not modified. Differentiable.
    """

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff)
        self.w3 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))
