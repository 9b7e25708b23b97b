"""Normalises each column (fixed next token) instead of each row (fixed previous token)."""
import torch


def bigram_log_probs(counts, alpha):
    smoothed = counts.float() + alpha
    return (smoothed / smoothed.sum(dim=0, keepdim=True)).log()
