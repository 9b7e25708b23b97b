"""Computes in float64 for accuracy and returns float64 cosines for float32 vectors."""
import torch


def pairwise_cosines(vectors):
    vectors = vectors.double()
    norms = vectors.norm(dim=1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("a zero vector has no direction")
    unit = vectors / norms
    return unit @ unit.T
