"""Puts the vocabulary dimension first: shape (vocab_size, ...) instead of (..., vocab_size)."""
import torch


def one_hot(ids, vocab_size):
    return (torch.arange(vocab_size).reshape(-1, *([1] * ids.dim())) == ids).float()
