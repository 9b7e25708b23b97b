"""Concatenates the words into one stream, so it also counts pairs that span two words."""


def count_pairs(words):
    stream = [token for word, count in words.items() for _ in range(count) for token in word]
    counts = {}
    for pair in zip(stream, stream[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts
