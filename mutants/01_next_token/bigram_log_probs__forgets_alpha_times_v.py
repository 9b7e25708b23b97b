"""Adds alpha to the numerator but only alpha (not alpha * V) to the row total: rows don't sum to 1."""
import torch


def bigram_log_probs(counts, alpha):
    counts = counts.float()
    return ((counts + alpha) / (counts.sum(dim=1, keepdim=True) + alpha)).log()
