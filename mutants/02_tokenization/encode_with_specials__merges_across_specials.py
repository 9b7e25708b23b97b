"""Cuts the special strings out, encodes the rest as one text (words run across the cut) and appends the special ids at the end."""
import re


def encode_with_specials(text, merges, specials):
    if not specials:
        return encode(text, merges)
    pattern = "|".join(re.escape(s) for s in specials)
    found = [m.group(0) for m in re.finditer(pattern, text)]
    ids = encode(re.sub(pattern, "", text), merges)
    return ids + [specials[s] for s in found]
