"""Returns plain dot products: the cosine without dividing by the lengths."""
import torch


def pairwise_cosines(vectors):
    norms = vectors.norm(dim=1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("a zero vector has no direction")
    unit = vectors
    return unit @ unit.T
