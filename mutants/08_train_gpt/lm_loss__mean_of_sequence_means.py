"""Averages per-sequence means, so tokens of sequences with more padding weigh more."""
import torch
import torch.nn.functional as F


def lm_loss(logits, targets, ignore_index=-100):
    per_token = F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=ignore_index, reduction="none")
    counted = (targets != ignore_index).sum(dim=1)
    return (per_token.sum(dim=1) / counted).mean()
