"""Sums the weights on the previous position and divides by T instead of T - 1."""
import torch


def previous_token_score(patterns):
    if patterns.shape[-1] < 2:
        raise ValueError("a previous-token score needs at least 2 positions")
    return patterns.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=2).mean(dim=0) / patterns.shape[-1]


def prefix_matching_score(patterns, tokens):
    T = tokens.shape[1]
    same = tokens.unsqueeze(2) == tokens.unsqueeze(1)                       # (B, i, j): x_i == x_j
    earlier = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril(diagonal=-1)   # j < i
    occurrence = same & earlier
    # Position j + 1 is a target of query i when j is an earlier occurrence: shift the j axis by one.
    targets = torch.zeros_like(occurrence)
    targets[:, :, 1:] = occurrence[:, :, :-1]
    queries = occurrence.any(dim=2)                                        # (B, i): has an earlier occurrence
    if not queries.any():
        raise ValueError("no token occurs twice, so there is nothing to match")
    weight = (patterns * targets.unsqueeze(1)).sum(dim=-1)                  # (B, H, i)
    return (weight * queries.unsqueeze(1)).sum(dim=(0, 2)) / queries.sum()
