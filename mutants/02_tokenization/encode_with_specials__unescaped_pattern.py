"""Puts the special strings into the pattern without re.escape, so '|' means "or" and '<', '>' split the text."""
import re


def encode_with_specials(text, merges, specials):
    if not specials:
        return encode(text, merges)
    pattern = "(" + "|".join(specials) + ")"
    ids = []
    for i, chunk in enumerate(re.split(pattern, text)):
        if chunk in specials:
            ids.append(specials[chunk])
        elif chunk:
            ids.extend(encode(chunk, merges))
    return ids
