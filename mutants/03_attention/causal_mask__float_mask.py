"""Returns a float 0/1 matrix instead of a bool tensor."""
import torch


def causal_mask(T):
    return torch.ones(T, T).tril()
