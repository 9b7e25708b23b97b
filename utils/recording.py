"""Small models that remember how they were called, for tests of training and evaluation loops.

A test of an evaluation loop has to know more than the number it returns: was the forward pass run
under ``torch.no_grad()``? Was the model in evaluation mode while it ran, and in which mode was it
left afterwards? A test cannot look inside the student's function, but it can hand it a model that
writes these facts down. Build one where the student's code runs with
``probes.make("utils.recording.RecordingLM", vocab_size=11, seed=3)``, pass it to the exercise, then
read ``model.calls`` (plain data: a list of dicts) and ``model.training``.

This module holds no exercise solution: students receive it as it is.
"""

from __future__ import annotations

import torch
from torch import nn


class RecordingLM(nn.Module):
    """A bigram language model (one logit table) that records every forward call.

    ``forward(idx)`` takes token ids of shape ``(B, T)`` (int64) and returns logits of shape
    ``(B, T, vocab_size)`` (float32): row ``idx[b, t]`` of the table. It has no dropout, so its output
    does not depend on the mode. Each call appends to ``self.calls`` a dict
    ``{"grad_enabled": bool, "training": bool, "shape": [B, T]}`` saying whether autograd was
    recording and whether the module was in training mode during that call.
    ``reset_calls()`` empties the record. The weights come from ``seed`` (same seed, same model).
    """

    def __init__(self, vocab_size: int = 11, seed: int = 0):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.table = nn.Parameter(torch.randn(vocab_size, vocab_size, generator=generator))
        self.calls: list[dict] = []

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        self.calls.append({"grad_enabled": bool(torch.is_grad_enabled()), "training": bool(self.training),
                           "shape": [int(s) for s in idx.shape]})
        return self.table[idx]

    def reset_calls(self) -> None:
        self.calls = []
