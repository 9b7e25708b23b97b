"""Writes digits as [0-9], so other decimal digits (٣, ３) match no alternative and vanish."""
import re


def split_words(text):
    return re.findall(r"'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?[0-9]+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+", text)
