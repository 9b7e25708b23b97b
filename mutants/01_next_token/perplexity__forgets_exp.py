"""Returns the mean negative log-likelihood (the cross-entropy) without exponentiating it."""
import torch


def perplexity(log_probs):
    return -log_probs.mean()
