r"""Drops the (?!\S) rule: a run of spaces before a word stays whole, so the word loses its leading space."""
import re


def split_words(text):
    return re.findall(r"'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+", text)
