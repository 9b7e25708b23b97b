"""Updates the counts correctly but finds the words to change by scanning every word for the pair's first token at each merge: cost grows with the corpus, not with the words that contain the pair."""
import collections


class PairCounter:
    def __init__(self, words):
        self.tokens = [list(word) for word in words]
        self.freqs = list(words.values())
        self.counts = count_pairs(words)

    def merge(self, pair, new_id):
        pair = tuple(pair)
        first = pair[0]
        for i, old in enumerate(self.tokens):
            if first not in old:
                continue
            new = merge(old, pair, new_id)
            if len(new) == len(old):
                continue
            freq = self.freqs[i]
            for p in zip(old, old[1:]):
                self.counts[p] -= freq
                if self.counts[p] == 0:
                    del self.counts[p]
            for p in zip(new, new[1:]):
                self.counts[p] = self.counts.get(p, 0) + freq
            self.tokens[i] = new

    def words(self):
        return {tuple(tokens): freq for tokens, freq in zip(self.tokens, self.freqs)}

    def replay(self, merges, first_id=256):
        """Given: apply merges[k] with the new id first_id + k, in order."""
        for k, pair in enumerate(merges):
            self.merge(tuple(pair), first_id + k)
