"""Breaks ties on the first token of the pair only, so pairs sharing it keep the order they were counted in."""
import collections


def train_bpe(text, num_merges):
    pairs = PairCounter(collections.Counter(tuple(word.encode("utf-8")) for word in split_words(text)))
    merges, vocab = [], {i: bytes([i]) for i in range(256)}
    while len(merges) < num_merges and pairs.counts:
        pair = min(pairs.counts, key=lambda p: (-pairs.counts[p], p[0]))
        new_id = 256 + len(merges)
        pairs.merge(pair, new_id)
        merges.append(pair)
        vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]
    return merges, vocab
