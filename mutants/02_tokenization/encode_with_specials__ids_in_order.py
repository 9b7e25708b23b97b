"""Numbers the special tokens after the given order (first special = smallest given id, and so on) instead of using each string's own id."""
import re


def encode_with_specials(text, merges, specials):
    if not specials:
        return encode(text, merges)
    first = min(specials.values())
    own = {s: first + k for k, s in enumerate(specials)}
    pattern = "(" + "|".join(re.escape(s) for s in specials) + ")"
    ids = []
    for i, chunk in enumerate(re.split(pattern, text)):
        if i % 2:
            ids.append(own[chunk])
        else:
            ids.extend(encode(chunk, merges))
    return ids
