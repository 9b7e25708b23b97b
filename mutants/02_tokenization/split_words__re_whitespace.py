"""Classifies letters and numbers by Unicode category but takes re's \s for whitespace, U+001C..U+001F included."""
import re
import unicodedata


def split_words(text):
    def stand_in(ch):
        if ch.isascii():
            return ch
        kind = unicodedata.category(ch)[0]
        return "a" if kind == "L" else "0" if kind == "N" else "\t" if ch.isspace() else "!"

    shadow = text.translate({ord(ch): stand_in(ch) for ch in set(text)})
    pattern = r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9\x1c-\x1f]+|[\s\x1c-\x1f]+(?![^\s\x1c-\x1f])|[\s\x1c-\x1f]+"
    return [text[m.start():m.end()] for m in re.finditer(pattern, shadow, flags=re.ASCII)]
