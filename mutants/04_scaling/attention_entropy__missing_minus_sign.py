"""Forgets the minus sign: returns sum p ln p, which is <= 0."""
import torch


def attention_entropy(weights):
    terms = torch.where(weights > 0, weights * torch.log(weights), torch.zeros_like(weights))
    return terms.sum(dim=-1)
