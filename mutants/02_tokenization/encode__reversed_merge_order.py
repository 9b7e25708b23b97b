"""Applies the merges from the last learned to the first."""


def encode(text, merges):
    ids = []
    for word in split_words(text):
        tokens = list(word.encode("utf-8"))
        for k in reversed(range(len(merges))):
            tokens = merge(tokens, merges[k], 256 + k)
        ids.extend(tokens)
    return ids
