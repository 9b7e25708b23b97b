"""Matches contractions in any case ('S, 'LL), which GPT-2 does not."""
import re


def split_words(text):
    return re.findall(r"'(?:[sdmtSDMT]|ll|ve|re|LL|VE|RE)| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+", text)
