"""Handles only the first special token of the dict (written for <|endoftext|> alone)."""


def encode_with_specials(text, merges, specials):
    if not specials:
        return encode(text, merges)
    special, special_id = next(iter(specials.items()))
    ids = []
    for i, chunk in enumerate(text.split(special)):
        if i:
            ids.append(special_id)
        ids.extend(encode(chunk, merges))
    return ids
