"""Divides the input by its norms in place."""
import torch


def pairwise_cosines(vectors):
    norms = vectors.norm(dim=1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("a zero vector has no direction")
    unit = vectors.div_(norms)
    return unit @ unit.T
