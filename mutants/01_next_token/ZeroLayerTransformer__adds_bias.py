"""Adds an output bias, a third parameter the contract does not have."""
import math

import torch
from torch import nn


class ZeroLayerTransformer(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.W_E = nn.Parameter(torch.randn(vocab_size, d_model))
        self.W_U = nn.Parameter(torch.randn(d_model, vocab_size) / math.sqrt(d_model))
        self.b = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, idx):
        return self.W_E[idx] @ self.W_U + self.b
