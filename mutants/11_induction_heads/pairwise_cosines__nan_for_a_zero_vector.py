"""Returns NaN rows for a zero vector instead of raising ValueError."""
import torch


def pairwise_cosines(vectors):
    norms = vectors.norm(dim=1, keepdim=True)
    unit = vectors / norms
    return unit @ unit.T
