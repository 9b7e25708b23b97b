"""Counts pairs only once, before any merge, and merges the top pairs of that first count."""
import collections


def train_bpe(text, num_merges):
    words = collections.Counter(tuple(w.encode("utf-8")) for w in split_words(text))
    counts = count_pairs(words)
    ranked = sorted(counts, key=lambda p: (-counts[p], p))[:num_merges]
    merges, vocab = [], {i: bytes([i]) for i in range(256)}
    for k, pair in enumerate(ranked):
        new_id = 256 + k
        words = {tuple(merge(list(w), pair, new_id)): n for w, n in words.items()}
        merges.append(pair)
        vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]
    return merges, vocab
