"""Builds the mask once for the first length it is asked for and crops that cached mask afterwards."""
import torch

_cache = {}


def causal_mask(T):
    if "mask" not in _cache:
        _cache["mask"] = torch.ones(T, T, dtype=torch.bool).tril()
    return _cache["mask"][:T, :T].clone()
