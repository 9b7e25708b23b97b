"""Exponentiates the total negative log-likelihood instead of the mean (1 / P(text))."""
import torch


def perplexity(log_probs):
    return torch.exp(-log_probs.sum())
