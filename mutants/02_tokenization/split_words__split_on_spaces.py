"""Splits on whitespace only (one leading space per piece), so punctuation and digits stick to the words."""
import re


def split_words(text):
    return re.findall(r" ?\S+|\s+(?!\S)|\s+", text)
