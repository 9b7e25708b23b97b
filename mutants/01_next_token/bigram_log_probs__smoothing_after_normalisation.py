"""Normalises the raw counts first, then adds alpha to the probabilities and renormalises."""
import torch


def bigram_log_probs(counts, alpha):
    probs = counts.float() / counts.float().sum(dim=1, keepdim=True).clamp(min=1)
    probs = probs + alpha
    return (probs / probs.sum(dim=1, keepdim=True)).log()
