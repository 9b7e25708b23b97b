"""Returns the caller's own list when the pair does not occur, although the contract says a new list."""


def merge(ids, pair, new_id):
    if not any(a == pair[0] and b == pair[1] for a, b in zip(ids, ids[1:])):
        return ids
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out
