"""Also accepts the typographic apostrophe U+2019 in contractions."""
import re


def split_words(text):
    return re.findall(r"['\u2019](?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+", text)
