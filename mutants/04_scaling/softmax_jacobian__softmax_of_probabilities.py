"""Treats p as logits and applies softmax to it again before building diag(p) - p p^T."""
import torch


def softmax_jacobian(p):
    p = torch.softmax(p, dim=-1)
    return torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)
