"""Forgets the diag(p) term and returns -p p^T."""
import torch


def softmax_jacobian(p):
    return -(p.unsqueeze(-1) * p.unsqueeze(-2))
