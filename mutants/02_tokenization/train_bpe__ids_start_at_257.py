"""Numbers new tokens from 257 (as if id 256 were reserved), so merges[k] does not create 256 + k."""
import collections


def train_bpe(text, num_merges):
    words = collections.Counter(tuple(w.encode("utf-8")) for w in split_words(text))
    merges, vocab = [], {i: bytes([i]) for i in range(256)}
    for k in range(num_merges):
        counts = count_pairs(words)
        if not counts:
            break
        pair = min(counts, key=lambda p: (-counts[p], p))
        new_id = 257 + k
        words = {tuple(merge(list(w), pair, new_id)): n for w, n in words.items()}
        merges.append(pair)
        vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]
    return merges, vocab
