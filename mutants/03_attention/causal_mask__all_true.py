"""No masking at all: every query may attend to every key."""
import torch


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool)
