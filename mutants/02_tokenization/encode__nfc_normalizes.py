"""NFC-normalizes the text first, so 'e' + combining accent is encoded as the precomposed 'é'."""
import math
import unicodedata


def encode(text, merges):
    rank = {pair: 256 + k for k, pair in enumerate(merges)}
    ids = []
    for word in split_words(unicodedata.normalize("NFC", text)):
        tokens = list(word.encode("utf-8"))
        while len(tokens) >= 2:
            pair = min(zip(tokens, tokens[1:]), key=lambda p: rank.get(p, math.inf))
            if pair not in rank:
                break
            tokens = merge(tokens, pair, rank[pair])
        ids.extend(tokens)
    return ids
