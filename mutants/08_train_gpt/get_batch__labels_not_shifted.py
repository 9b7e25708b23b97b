"""Returns the input window as its own target: labels not shifted by one."""
import torch


def get_batch(data, block_size, batch_size, generator=None):
    n = data.shape[0]
    if n < block_size + 1:
        raise ValueError("too short")
    starts = torch.randint(n - block_size, (batch_size,), generator=generator)
    index = (starts[:, None] + torch.arange(block_size)).to(data.device)
    return data[index], data[index]
