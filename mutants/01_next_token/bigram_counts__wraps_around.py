"""Pairs ids with torch.roll(ids, -1), which adds a spurious (last, first) pair."""
import torch


def bigram_counts(ids, vocab_size):
    counts = torch.zeros(vocab_size, vocab_size, dtype=torch.long)
    counts.index_put_((ids, torch.roll(ids, -1)), torch.ones_like(ids), accumulate=True)
    return counts
