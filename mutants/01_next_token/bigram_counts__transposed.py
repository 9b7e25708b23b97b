"""Stores counts[next, previous]: rows are the next token instead of the context."""
import torch


def bigram_counts(ids, vocab_size):
    counts = torch.zeros(vocab_size, vocab_size, dtype=torch.long)
    counts.index_put_((ids[1:], ids[:-1]), torch.ones_like(ids[1:]), accumulate=True)
    return counts
