"""Uses log base 2 (bits) instead of the natural log (nats)."""
import torch


def attention_entropy(weights):
    terms = torch.where(weights > 0, weights * torch.log2(weights), torch.zeros_like(weights))
    return -terms.sum(dim=-1)
