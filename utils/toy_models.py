"""Tiny models with known behaviour, for tests that need a model to pass to an exercise.

Build them where the student's code runs with ``probes.make("utils.toy_models.PrefixSumLM", ...)``.
They are test instruments, not answers to any exercise.
"""

from __future__ import annotations

import torch
from torch import nn


class PrefixSumLM(nn.Module):
    """A language model whose prediction at position t depends on every token up to t.

    ``logits[b, t] = sum over s <= t of table[ids[b, s]]`` for a (V, V) ``table``: a loop that feeds the
    model only its last token, or a window shorter than the whole sequence, predicts something else.
    """

    def __init__(self, vocab_size: int, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(vocab_size, vocab_size, dtype=dtype))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.dtype != torch.int64 or ids.dim() != 2:
            raise TypeError(f"PrefixSumLM takes int64 ids of shape (B, T), got {tuple(ids.shape)} {ids.dtype}")
        return self.table[ids].cumsum(dim=1)
