"""Divides by ln T (a normalised entropy in [0, 1]) instead of returning the entropy in nats."""
import math

import torch


def attention_entropy(weights):
    terms = torch.where(weights > 0, weights * torch.log(weights), torch.zeros_like(weights))
    return -terms.sum(dim=-1) / math.log(max(weights.shape[-1], 2))
