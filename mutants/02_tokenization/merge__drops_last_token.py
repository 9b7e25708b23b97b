"""Loops while i < len(ids) - 1, so a last token that is not part of a merged pair is lost."""


def merge(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids) - 1:
        if ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out
