"""Builds letters as re's [^\W\d_] and numbers as \d, so ², ½ and Ⅻ (categories No, Nl) count as letters."""
import re


def split_words(text):
    return re.findall(r"'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+", text)
