"""Off by one: pairs every token with itself (ids[i], ids[i]) instead of with its successor."""
import torch


def bigram_counts(ids, vocab_size):
    counts = torch.zeros(vocab_size, vocab_size, dtype=torch.long)
    counts.index_put_((ids[:-1], ids[:-1]), torch.ones_like(ids[:-1]), accumulate=True)
    return counts
