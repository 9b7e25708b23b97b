"""Returns the smoothed probabilities themselves, forgetting the log."""
import torch


def bigram_log_probs(counts, alpha):
    smoothed = counts.float() + alpha
    return smoothed / smoothed.sum(dim=1, keepdim=True)
