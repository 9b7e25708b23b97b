"""Converts every input with .float(), so float64 counts give a float32 result."""
import torch


def bigram_log_probs(counts, alpha):
    smoothed = counts.float() + alpha
    return (smoothed / smoothed.sum(dim=1, keepdim=True)).log()
