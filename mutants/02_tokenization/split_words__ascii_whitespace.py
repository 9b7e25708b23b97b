"""Treats only space, tab, newline and carriage return as whitespace; a no-break space becomes a symbol."""
import re


def split_words(text):
    return re.findall(r"'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d+| ?(?:[^ \t\n\r\w]|_)+|[ \t\n\r]+(?![^ \t\n\r])|[ \t\n\r]+", text)
