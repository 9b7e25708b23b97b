"""Returns slices of data when one window is asked for, so the batch is a view that writes through to the stream."""
import torch


def get_batch(data, block_size, batch_size, generator=None):
    n = data.shape[0]
    if n < block_size + 1:
        raise ValueError(f"need at least block_size + 1 = {block_size + 1} tokens, got {n}")
    starts = torch.randint(n - block_size, (batch_size,), generator=generator)
    if batch_size == 1:
        s = int(starts[0])
        return data[s:s + block_size].unsqueeze(0), data[s + 1:s + block_size + 1].unsqueeze(0)
    index = (starts[:, None] + torch.arange(block_size)).to(data.device)
    return data[index], data[index + 1]
