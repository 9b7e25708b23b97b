"""Hands (B, T, V) logits to F.cross_entropy unflattened: T is taken for the class dimension."""
import torch
import torch.nn.functional as F


def lm_loss(logits, targets, ignore_index=-100):
    return F.cross_entropy(logits, targets, ignore_index=ignore_index)
