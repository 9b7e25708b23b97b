"""Divides each column by its norm instead of each row."""
import torch


def pairwise_cosines(vectors):
    norms = vectors.norm(dim=1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("a zero vector has no direction")
    unit = vectors / vectors.norm(dim=0, keepdim=True)
    return unit @ unit.T
