"""Forgets the contraction alternative: "it's" gives 'it', "'", 's' instead of 'it', "'s"."""
import re


def split_words(text):
    return re.findall(r" ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+", text)
