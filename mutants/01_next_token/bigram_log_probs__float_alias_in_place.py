"""Calls counts.float() (the same tensor for float32 input) and then adds alpha in place."""
import torch


def bigram_log_probs(counts, alpha):
    smoothed = counts.float()
    smoothed += alpha
    return (smoothed / smoothed.sum(dim=1, keepdim=True)).log()
