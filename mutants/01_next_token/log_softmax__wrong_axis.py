"""Normalises over the first dimension (columns of a batch) instead of the last one."""
import torch


def log_softmax(logits):
    shifted = logits - logits.max(dim=0, keepdim=True).values
    return shifted - shifted.exp().sum(dim=0, keepdim=True).log()
