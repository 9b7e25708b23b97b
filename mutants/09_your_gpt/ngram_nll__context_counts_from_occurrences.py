"""Counts contexts by their occurrences anywhere in the training text (its last positions included) instead of the n-grams that start with them."""
import torch


def ngram_nll(train_ids, val_ids, vocab_size, order, alpha):
    """Mean negative log-likelihood (nats per token) of val_ids under an add-alpha n-gram model of train_ids.

    Args:
        train_ids, val_ids: 1-D int64 tensors of token ids in [0, vocab_size). Never modified.
        vocab_size: V >= 1.
        order: n >= 1 (1 = unigram, 2 = bigram, 3 = trigram).
        alpha: float > 0, the pseudo-count given to every (context, token) pair.
    Returns:
        A Python float: the mean over every position t >= n - 1 of val_ids of
        -ln P(val[t] | val[t-n+1 : t]), with P(w | c) = (N(c, w) + alpha) / (N(c) + alpha * V), where
        N(c, w) counts the n-grams (c, w) in train_ids and N(c) = sum over w' of N(c, w') (for n = 1,
        N(c) is len(train_ids)). There are len(val_ids) - n + 1 such positions.
    Raises:
        ValueError: if order < 1, alpha <= 0, or len(train_ids) or len(val_ids) < order.
    """
    if order < 1 or alpha <= 0 or len(train_ids) < order or len(val_ids) < order:
        raise ValueError("need order >= 1, alpha > 0 and at least `order` tokens in each split")

    def keys(ids):
        n = len(ids) - order + 1
        key = torch.zeros(n, dtype=torch.int64)
        for j in range(order):
            key = key * vocab_size + ids[j:j + n].long()
        return key

    def keys_short(ids):
        if order == 1:
            return torch.zeros(len(ids), dtype=torch.int64)
        n = len(ids) - order + 2
        key = torch.zeros(n, dtype=torch.int64)
        for j in range(order - 1):
            key = key * vocab_size + ids[j:j + n].long()
        return key

    def lookup(values, counts, queries):
        at = torch.searchsorted(values, queries).clamp(max=len(values) - 1)
        return torch.where(values[at] == queries, counts[at], torch.zeros_like(queries))

    train_keys, val_keys = keys(train_ids), keys(val_ids)
    grams, gram_counts = torch.unique(train_keys, return_counts=True)
    contexts, context_counts = torch.unique(keys_short(train_ids), return_counts=True)
    numerator = lookup(grams, gram_counts, val_keys).double() + alpha
    denominator = lookup(contexts, context_counts, val_keys // vocab_size).double() + alpha * vocab_size
    return float(-(numerator / denominator).log().mean())
