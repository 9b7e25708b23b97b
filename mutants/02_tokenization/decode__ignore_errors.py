"""Decodes with errors="ignore", so invalid bytes vanish instead of becoming U+FFFD."""


def decode(ids, vocab):
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="ignore")
