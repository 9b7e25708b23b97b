"""Decodes with utf-8-sig, which silently drops a leading U+FEFF (byte-order mark)."""


def decode(ids, vocab):
    return b"".join(vocab[i] for i in ids).decode("utf-8-sig", errors="replace")
