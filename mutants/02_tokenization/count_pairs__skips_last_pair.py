"""Off-by-one loop bound: never counts the last pair of a word."""


def count_pairs(words):
    counts = {}
    for word, count in words.items():
        for i in range(len(word) - 2):
            pair = (word[i], word[i + 1])
            counts[pair] = counts.get(pair, 0) + count
    return counts
