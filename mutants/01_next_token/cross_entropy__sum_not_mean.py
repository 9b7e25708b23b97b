"""Sums the per-example losses instead of averaging them."""
import torch


def cross_entropy(logits, targets):
    log_probs = log_softmax(logits)
    return -log_probs[torch.arange(logits.shape[0]), targets].sum()
