"""Correct results, but merges in every word and recounts all pairs after each merge: time grows with the corpus."""
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
        self.tokens = [merge(t, tuple(pair), new_id) for t in self.tokens]
        self.counts = count_pairs(self.words())

    def words(self):
        return {tuple(tokens): freq for tokens, freq in zip(self.tokens, self.freqs)}

    def replay(self, merges, first_id=256):
        """Given: apply merges[k] with the new id first_id + k, in order."""
        for k, pair in enumerate(merges):
            self.merge(tuple(pair), first_id + k)

