r"""Uses \w+ for words, so letters, digits and underscores run together ('abc123def' is one piece)."""
import re


def split_words(text):
    return re.findall(r"'(?:[sdmt]|ll|ve|re)| ?\w+| ?[^\s\w]+|\s+(?!\S)|\s+", text)
