"""Strictly lower triangle: a token may not attend to itself."""
import torch


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)
