"""Greedy longest-match against the vocabulary (WordPiece style) instead of applying merges in order."""


def encode(text, merges):
    vocab = {bytes([i]): i for i in range(256)}
    pieces = {i: bytes([i]) for i in range(256)}
    for k, (a, b) in enumerate(merges):
        pieces[256 + k] = pieces[a] + pieces[b]
        vocab[pieces[256 + k]] = 256 + k
    longest = max(len(p) for p in vocab)
    ids = []
    for word in split_words(text):
        data = word.encode("utf-8")
        i = 0
        while i < len(data):
            for size in range(min(longest, len(data) - i), 0, -1):
                if data[i:i + size] in vocab:
                    ids.append(vocab[data[i:i + size]])
                    i += size
                    break
    return ids
