"""Adds 1 per occurrence and ignores how often each word occurs in the corpus."""


def count_pairs(words):
    counts = {}
    for word in words:
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + 1
    return counts
