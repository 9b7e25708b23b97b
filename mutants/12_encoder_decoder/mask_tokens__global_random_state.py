"""Draws from the global random state instead of the generator it is given."""
import torch


def mask_tokens(ids, mask_id, vocab_size, special_ids, generator, mask_prob=0.15):
    """BERT's masking: the inputs and labels of a masked-language-model batch.

    ids: int64 tensor (B, T) of token ids in [0, vocab_size). special_ids: a list of ints (padding,
    CLS, SEP, the mask id itself, ...): positions holding them are never chosen, and they are never drawn as
    random tokens. Every other id in [0, vocab_size) is "ordinary". generator: a torch.Generator, the only
    source of randomness (the same generator state gives the same result).
      1. Choose each position whose id is ordinary independently with probability mask_prob.
      2. At each chosen position, independently: with probability 0.8 write mask_id; with 0.1 a random
         ordinary token, uniform over the ordinary ids (it may equal the original); with 0.1 keep the original.
    Returns (inputs, labels), two new int64 tensors of ids's shape: inputs as above; labels hold the
    original id at every chosen position and -100 everywhere else (F.cross_entropy's ignore_index).
    ids is not modified. With no ordinary position (or mask_prob = 0) inputs equals ids and every label is
    -100. Raises ValueError if mask_prob is outside [0, 1].
    """
    if not 0.0 <= mask_prob <= 1.0:
        raise ValueError(f"mask_prob must be in [0, 1], got {mask_prob}")
    special = {int(i) for i in special_ids}
    ordinary = torch.tensor([i for i in range(vocab_size) if i not in special], dtype=torch.long)
    inputs, labels = ids.clone(), torch.full_like(ids, -100)
    if len(ordinary) == 0:
        return inputs, labels
    maskable = torch.isin(ids, ordinary)
    chosen = (torch.rand(ids.shape) < mask_prob) & maskable
    action = torch.rand(ids.shape, generator=generator)
    random_tokens = ordinary[torch.randint(len(ordinary), ids.shape, generator=generator)]
    inputs[chosen & (action < 0.8)] = mask_id
    swap = chosen & (action >= 0.8) & (action < 0.9)
    inputs[swap] = random_tokens[swap]
    labels[chosen] = ids[chosen]
    return inputs, labels
