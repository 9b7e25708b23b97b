"""Ignores the special tokens: <|endoftext|> is encoded as ordinary text and merged like any other bytes."""


def encode_with_specials(text, merges, specials):
    return encode(text, merges)
