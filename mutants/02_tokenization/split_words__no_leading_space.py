"""Leaves every space on its own instead of attaching one space to the word that follows."""
import re


def split_words(text):
    return re.findall(r"'(?:[sdmt]|ll|ve|re)|[^\W\d_]+|\d+|(?:[^\s\w]|_)+|\s+", text)
