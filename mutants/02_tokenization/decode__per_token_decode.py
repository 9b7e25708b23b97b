"""Decodes each token separately, which breaks characters whose bytes are split over tokens."""


def decode(ids, vocab):
    return "".join(vocab[i].decode("utf-8", errors="replace") for i in ids)
