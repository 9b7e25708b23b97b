"""NFC-normalizes the decoded text, so 'e' + combining accent comes back as the precomposed 'é'."""
import unicodedata


def decode(ids, vocab):
    return unicodedata.normalize("NFC", b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace"))
