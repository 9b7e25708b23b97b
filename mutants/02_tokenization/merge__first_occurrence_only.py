"""Replaces only the first occurrence of the pair."""


def merge(ids, pair, new_id):
    for i in range(len(ids) - 1):
        if ids[i] == pair[0] and ids[i + 1] == pair[1]:
            return ids[:i] + [new_id] + ids[i + 2:]
    return list(ids)
