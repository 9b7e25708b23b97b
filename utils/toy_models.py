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


class GradModeLM(nn.Module):
    """A bigram table whose logits show whether autograd is recording.

    ``logits[b, t] = table[ids[b, t]]``, except that while gradients are being recorded
    (``torch.is_grad_enabled()``) every position predicts token 0 by a margin of 1000: greedy decoding
    under ``torch.no_grad()`` (or ``torch.inference_mode()``) follows the table, without it emits 0s.
    """

    def __init__(self, vocab_size: int, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(vocab_size, vocab_size, dtype=dtype))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        logits = self.table[ids]
        if torch.is_grad_enabled():
            bias = torch.zeros(logits.shape[-1], dtype=logits.dtype)
            bias[0] = 1000.0
            logits = logits + bias
        return logits
