"""Counts in uint8, so a pair seen 299 times wraps around to 43."""
import torch


def bigram_counts(ids, vocab_size):
    counts = torch.zeros(vocab_size, vocab_size, dtype=torch.uint8)
    counts.index_put_((ids[:-1], ids[1:]), torch.ones(len(ids) - 1 if len(ids) else 0, dtype=torch.uint8), accumulate=True)
    return counts
