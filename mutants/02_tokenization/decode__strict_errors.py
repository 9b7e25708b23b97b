"""Decodes with the default errors="strict", so invalid UTF-8 raises instead of becoming U+FFFD."""


def decode(ids, vocab):
    return b"".join(vocab[i] for i in ids).decode("utf-8")
