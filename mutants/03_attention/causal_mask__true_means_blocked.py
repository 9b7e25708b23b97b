"""The opposite convention: True marks the blocked (future) entries."""
import torch


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
