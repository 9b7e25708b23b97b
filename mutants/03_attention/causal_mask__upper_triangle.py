"""The wrong triangle: True where j >= i (queries see the future)."""
import torch


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).triu()
