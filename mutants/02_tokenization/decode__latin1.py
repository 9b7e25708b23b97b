"""Turns each byte into the character with that number (Latin-1) instead of decoding UTF-8."""


def decode(ids, vocab):
    return "".join(chr(b) for i in ids for b in vocab[i])
