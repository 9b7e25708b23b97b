"""Skips the max-subtraction, so exp overflows for large logits (inf - inf = nan)."""
import torch


def log_softmax(logits):
    return logits - logits.exp().sum(dim=-1, keepdim=True).log()
