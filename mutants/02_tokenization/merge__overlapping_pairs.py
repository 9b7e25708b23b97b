"""Checks every position without skipping past a merged pair, so overlapping occurrences both merge."""


def merge(ids, pair, new_id):
    out = []
    for i in range(len(ids)):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            out.append(new_id)
        elif i > 0 and (ids[i - 1], ids[i]) == tuple(pair):
            continue
        else:
            out.append(ids[i])
    return out
