"""Returns p p^T - diag(p), the negative of the Jacobian."""
import torch


def softmax_jacobian(p):
    return p.unsqueeze(-1) * p.unsqueeze(-2) - torch.diag_embed(p)
