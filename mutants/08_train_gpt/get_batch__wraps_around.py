"""Draws any start and wraps around the end of the stream (windows that are not contiguous text)."""
import torch


def get_batch(data, block_size, batch_size, generator=None):
    n = data.shape[0]
    if n < block_size + 1:
        raise ValueError("too short")
    starts = torch.randint(n, (batch_size,), generator=generator)
    index = (starts[:, None] + torch.arange(block_size)).to(data.device)
    return data[index % n], data[(index + 1) % n]
