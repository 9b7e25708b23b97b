"""Gives merge k the id 255 + k instead of 256 + k."""


def encode(text, merges):
    ids = []
    for word in split_words(text):
        tokens = list(word.encode("utf-8"))
        for k, pair in enumerate(merges):
            tokens = merge(tokens, pair, 255 + k)
        ids.extend(tokens)
    return ids
