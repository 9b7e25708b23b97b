"""Applies the merges to the bytes of the whole text, so merges can cross word boundaries."""


def encode(text, merges):
    tokens = list(text.encode("utf-8"))
    for k, pair in enumerate(merges):
        tokens = merge(tokens, pair, 256 + k)
    return tokens
