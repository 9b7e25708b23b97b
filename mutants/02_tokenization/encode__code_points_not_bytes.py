"""Starts from Unicode code points (ord) instead of UTF-8 bytes."""


def encode(text, merges):
    ids = []
    for word in split_words(text):
        tokens = [ord(ch) for ch in word]
        for k, pair in enumerate(merges):
            tokens = merge(tokens, pair, 256 + k)
        ids.extend(tokens)
    return ids
