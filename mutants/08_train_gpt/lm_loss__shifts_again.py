"""Shifts the (already shifted) targets once more: compares position t with the token two ahead."""
import torch
import torch.nn.functional as F


def lm_loss(logits, targets, ignore_index=-100):
    v = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, v), targets[:, 1:].reshape(-1), ignore_index=ignore_index)
