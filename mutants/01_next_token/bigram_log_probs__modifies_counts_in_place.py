"""Adds alpha to the caller's counts in place (counts += alpha), corrupting them for later use."""
import torch


def bigram_log_probs(counts, alpha):
    if not counts.is_floating_point():
        counts = counts.float()
    counts += alpha
    return (counts / counts.sum(dim=1, keepdim=True)).log()
