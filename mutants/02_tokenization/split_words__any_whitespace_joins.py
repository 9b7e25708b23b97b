"""Lets any whitespace character (\\s?) join the following word, not only the space."""
import re


def split_words(text):
    return re.findall(r"'(?:[sdmt]|ll|ve|re)|\s?[^\W\d_]+|\s?\d+|\s?(?:[^\s\w]|_)+|\s+(?!\S)|\s+", text)
