"""Puts a space between tokens, as if they were words."""


def decode(ids, vocab):
    return " ".join(vocab[i].decode("utf-8", errors="replace") for i in ids)
