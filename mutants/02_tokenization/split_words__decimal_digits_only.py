"""Takes letters by Unicode category but numbers as decimal digits (Nd) only, so ², ½ and Ⅻ become symbols."""
import re
import unicodedata


def split_words(text):
    def stand_in(ch):
        if ch.isascii():
            return "!" if "\x1c" <= ch <= "\x1f" else ch
        if unicodedata.category(ch)[0] == "L":
            return "a"
        if unicodedata.category(ch) == "Nd":
            return "0"
        return "\t" if ch.isspace() else "!"

    shadow = text.translate({ord(ch): stand_in(ch) for ch in set(text)})
    pattern = r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+"
    return [text[m.start():m.end()] for m in re.finditer(pattern, shadow, flags=re.ASCII)]
