"""Forgets the minus sign: exp(mean log-prob) is one over the perplexity, a number <= 1."""
import torch


def perplexity(log_probs):
    return torch.exp(log_probs.mean())
