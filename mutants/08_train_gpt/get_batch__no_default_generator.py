"""Leaves the default off the generator argument, so a call without a generator raises TypeError."""
import torch


def get_batch(data, block_size, batch_size, generator):
    n = data.shape[0]
    if n < block_size + 1:
        raise ValueError(f"need at least block_size + 1 = {block_size + 1} tokens, got {n}")
    starts = torch.randint(n - block_size, (batch_size,), generator=generator)
    index = (starts[:, None] + torch.arange(block_size)).to(data.device)
    return data[index], data[index + 1]
