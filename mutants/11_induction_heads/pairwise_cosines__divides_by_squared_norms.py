"""Divides the dot products by the squared norms."""
import torch


def pairwise_cosines(vectors):
    norms = vectors.norm(dim=1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("a zero vector has no direction")
    return (vectors @ vectors.T) / (norms * norms.T) ** 2
