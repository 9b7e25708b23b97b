"""Computes log-softmax without subtracting the row maximum, so logits of 1000 overflow."""
import torch


def cross_entropy(logits, targets):
    log_probs = logits - logits.exp().sum(dim=1, keepdim=True).log()
    return -log_probs[torch.arange(logits.shape[0]), targets].mean()
