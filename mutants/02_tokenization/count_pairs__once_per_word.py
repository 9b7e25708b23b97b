"""Counts each distinct pair once per word (a set), so repeated and overlapping pairs are undercounted."""


def count_pairs(words):
    counts = {}
    for word, count in words.items():
        for pair in set(zip(word, word[1:])):
            counts[pair] = counts.get(pair, 0) + count
    return counts
