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


class TimeMajorLM(nn.Module):
    """A bigram table that computes its logits time-major and returns them as a transposed view.

    ``logits[b, t] = table[ids[b, t]]``, as ``nn.Embedding`` would give, but built as ``(T, B, V)`` and
    transposed to ``(B, T, V)``, so the result is not contiguous (as from a model that works in
    ``(T, B, V)`` internally): code that flattens the logits with ``.view`` fails on it, ``.reshape`` works.
    """

    def __init__(self, vocab_size: int, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(vocab_size, vocab_size, dtype=dtype))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        time_major = self.table[ids.T.contiguous()].contiguous()      # (T, B, V) in memory
        return time_major.transpose(0, 1)


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


class CopySeq2Seq(nn.Module):
    """An encoder-decoder with known behaviour, for tests of a decoding loop: it copies its source.

    It has the interface of notebook 12's ``Seq2Seq``:

    * ``encode(src, src_padding_mask)``: ``src`` int64 ``(B, S)``, the mask bool ``(B, S)`` (True = padding,
      right-padded rows). Returns the "memory", float32 ``(B, S, 1)``: the source ids, -1 at padding.
    * ``cross_kv(memory)``: a list with one ``(keys, values)`` pair, each a copy of the memory.
    * ``decode(tgt_in, memory_kv, src_padding_mask)``: ``tgt_in`` int64 ``(B, T)``; returns float32 logits
      ``(B, T, vocab_size)``. Position ``t`` of row ``b`` predicts (by a margin of 10) source token ``t`` while
      ``t`` is less than the row's source length, then ``eos_id`` at ``t`` equal to that length, then
      ``after_eos_id`` (neither pad nor eos). It predicts ``after_eos_id`` instead whenever the row's prefix is
      not ``bos_id`` followed by what the model itself predicted before (a loop that does not feed its own
      choices back, or does not start from BOS, goes wrong).

    It counts ``encode_calls`` and ``cross_kv_calls`` and records, per ``decode`` call, a dict
    ``{"shape": [B, T], "grad_enabled": bool, "training": bool}`` in ``decode_calls``, and per ``encode`` and
    ``cross_kv`` call, in call order, ``{"method": name, "grad_enabled": bool, "training": bool}`` in
    ``encode_and_cross_kv_calls`` (plain data). It has one submodule, ``inner`` (an ``nn.Identity``, no
    parameters), so a mode set on the top module alone (``model.training = False``) shows: ``training`` is
    True when the model or ``inner`` is in training mode, and ``modes()`` returns both modes by name.

    ``decode`` computes on the device of its parameter ``scale`` (``utils.fake_cuda`` labels a model argument's
    ``cuda:0``), so a loop whose tokens are made without ``device=`` hands it CPU tokens, refused as on a GPU.
    """

    def __init__(self, vocab_size: int = 12, bos_id: int = 1, eos_id: int = 2, after_eos_id: int = 3):
        super().__init__()
        self.vocab_size, self.bos_id, self.eos_id, self.after_eos_id = vocab_size, bos_id, eos_id, after_eos_id
        self.scale = nn.Parameter(torch.tensor(10.0))
        self.inner = nn.Identity()
        self.encode_calls = 0
        self.cross_kv_calls = 0
        self.decode_calls: list[dict] = []
        self.encode_and_cross_kv_calls: list[dict] = []

    def modes(self) -> dict[str, bool]:
        """The training mode of the model and of its submodule: ``{"model": bool, "inner": bool}``."""
        return {"model": bool(self.training), "inner": bool(self.inner.training)}

    def _training(self) -> bool:
        return bool(self.training or self.inner.training)

    def _record(self, method: str) -> None:
        self.encode_and_cross_kv_calls.append({"method": method, "grad_enabled": bool(torch.is_grad_enabled()),
                                               "training": self._training()})

    def encode(self, src: torch.Tensor, src_padding_mask: torch.Tensor) -> torch.Tensor:
        self.encode_calls += 1
        self._record("encode")
        return torch.where(src_padding_mask, -1, src).float().unsqueeze(-1)

    def cross_kv(self, memory: torch.Tensor) -> list:
        self.cross_kv_calls += 1
        self._record("cross_kv")
        return [(memory.clone(), memory.clone())]

    def decode(self, tgt_in: torch.Tensor, memory_kv, src_padding_mask: torch.Tensor) -> torch.Tensor:
        self.decode_calls.append({"shape": [int(s) for s in tgt_in.shape], "grad_enabled": bool(torch.is_grad_enabled()),
                                  "training": self._training()})
        source = memory_kv[0][1][..., 0].long()
        B, T = tgt_in.shape
        # Made on the model's device (its parameter's), as a model on a GPU computes: a loop that feeds decode
        # tokens made on the CPU meets them below, as a GPU model's embedding would refuse CPU ids.
        wanted = torch.full((B, T), self.after_eos_id, dtype=torch.long, device=self.scale.device)
        for b in range(B):
            length = int((source[b] >= 0).sum())
            row = source[b, :length].tolist() + [self.eos_id]
            for t in range(T):
                if t < len(row):
                    wanted[b, t] = row[t]
        expected_prefix = torch.cat([torch.full((B, 1), self.bos_id, dtype=torch.long, device=self.scale.device),
                                     wanted[:, :-1]], dim=1)
        fed_back = (tgt_in == expected_prefix).long().cumprod(dim=1).bool()
        wanted = torch.where(fed_back, wanted, self.after_eos_id)
        return self.scale * nn.functional.one_hot(wanted, self.vocab_size).float()
