"""Builds the table of offsets 0..T-1 once and keeps it, so a later call with another block_size gets the first one's windows."""
import torch

_offsets = None


def get_batch(data, block_size, batch_size, generator=None):
    global _offsets
    n = data.shape[0]
    if n < block_size + 1:
        raise ValueError(f"need at least block_size + 1 = {block_size + 1} tokens, got {n}")
    if _offsets is None or _offsets.numel() < block_size:
        _offsets = torch.arange(block_size)
    starts = torch.randint(n - block_size, (batch_size,), generator=generator)
    index = (starts[:, None] + _offsets[None, :]).to(data.device)
    return data[index], data[index + 1]
