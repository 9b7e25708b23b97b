"""Escapes only '|' in the special strings, so '[SEP]' becomes a character class and '.' or '*' keep their pattern meaning."""
import re


def encode_with_specials(text, merges, specials):
    if not specials:
        return encode(text, merges)
    pattern = "(" + "|".join(s.replace("|", r"\|") for s in specials) + ")"
    ids = []
    for i, chunk in enumerate(re.split(pattern, text)):
        if i % 2:
            ids.append(specials[chunk])
        else:
            ids.extend(encode(chunk, merges))
    return ids
