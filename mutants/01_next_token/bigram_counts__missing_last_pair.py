"""Off by one: stops one pair early and never counts the last (ids[-2], ids[-1]) pair."""
import torch


def bigram_counts(ids, vocab_size):
    counts = torch.zeros(vocab_size, vocab_size, dtype=torch.long)
    prev, nxt = ids[:-2], ids[1:-1]
    counts.index_put_((prev, nxt), torch.ones_like(nxt), accumulate=True)
    return counts
