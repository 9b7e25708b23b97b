"""Returns an additive float mask (0 allowed, -inf blocked) instead of booleans."""
import torch


def causal_mask(T):
    return torch.zeros(T, T).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(diagonal=1), float('-inf'))
