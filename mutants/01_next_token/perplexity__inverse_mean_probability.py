"""Uses one over the arithmetic mean of the probabilities instead of the geometric mean."""
import torch


def perplexity(log_probs):
    return 1.0 / log_probs.exp().mean()
