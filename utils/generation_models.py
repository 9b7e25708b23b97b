"""Language models with known behaviour for notebook 13's decoding exercises, and one probe.

Build them where the student's code runs with ``probes.make("utils.generation_models.TableLM", table)``.
They are test instruments and adapters, not answers to any exercise: none of them searches or samples.

* ``TableLM(table)``: a bigram model, ``logits[b, t] = table[ids[b, t]]``, that counts its calls.
* ``PrefixTableLM(table, block_size)``: logits that depend on every earlier token (the mean of the table's
  rows over the prefix), with notebook 10's cache interface, its cache holding the token ids themselves.
* ``RecomputedCache(model, block_size)``: notebook 10's cache interface for any model called as
  ``model(ids)``; the cache holds the token ids and every call recomputes the whole prefix (the same logits
  as a real KV cache, none of its speed).
* ``CachedTableLM(table, block_size)``: ``TableLM`` behind that interface.
* ``LogitsOnly(model)``: ``model(ids)[0]`` for a model that returns ``(logits, caches)`` (``TinyGPT``).
* ``draw_counts(sampler, ...)``: many seeded calls of a sampling function, counted where it runs.
"""

from __future__ import annotations

import torch
from torch import nn


def _logits_of(output):
    return output[0] if isinstance(output, tuple) else output


class TableLM(nn.Module):
    """A bigram language model with a fixed (V, V) table: ``logits[b, t] = table[ids[b, t]]``.

    ``forward(ids)`` takes int64 ``(B, T)`` and returns float logits ``(B, T, V)`` in ``dtype`` (float32 by
    default; bfloat16 makes a low-precision model). It records the shape of every input in ``calls``, so a test
    can count forwards.
    """

    def __init__(self, table, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.table = nn.Parameter(torch.as_tensor(table, dtype=dtype).clone(), requires_grad=False)
        self.calls: list[list[int]] = []

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.dtype != torch.int64 or ids.dim() != 2:
            raise TypeError(f"TableLM takes int64 ids of shape (B, T), got {tuple(ids.shape)} {ids.dtype}")
        self.calls.append([int(s) for s in ids.shape])
        return self.table[ids]


class RecomputedCache(nn.Module):
    """Notebook 10's cache interface for a model without one: ``forward(idx)`` -> ``(logits, None)``;
    ``forward(idx, caches)`` -> ``(logits of idx's positions, new caches)``.

    ``caches`` is a list with one entry (``n_layer = 1``): ``None`` before the first call, else a dict
    ``{"k": ids, "v": ids}`` of float tensors ``(B, 1, P, 1)`` holding the P tokens seen so far, batch first
    (reorder it along dim 0 as you would a KV cache). Each call runs ``model`` on the whole sequence, so the
    logits are exactly the cache-free ones; a cache whose rows belong to other sequences gives other logits.
    ``ValueError`` when the cache's batch differs from ``idx``'s or the positions pass ``block_size``.
    Records every ``idx`` shape in ``calls`` and ``{"grad_enabled", "training"}`` per call in ``modes``.
    """

    def __init__(self, model: nn.Module, block_size: int):
        super().__init__()
        self.model, self.block_size, self.n_layer = model, int(block_size), 1
        self.vocab_size = int(getattr(model, "vocab_size", 0)) or None
        self.calls: list[list[int]] = []
        self.modes: list[dict] = []

    def forward(self, idx: torch.Tensor, caches: list | None = None):
        self.calls.append([int(s) for s in idx.shape])
        self.modes.append({"grad_enabled": bool(torch.is_grad_enabled()),
                           "training": bool(self.training or self.model.training)})
        if caches is None:
            return _logits_of(self.model(idx)), None
        if len(caches) != self.n_layer:
            raise ValueError(f"expected a list of {self.n_layer} cache entry, got {len(caches)}")
        full = idx
        if caches[0] is not None:
            seen = caches[0]["k"]
            if seen.shape[0] != idx.shape[0]:
                raise ValueError(f"the cache holds {seen.shape[0]} sequences and idx {idx.shape[0]}: reorder "
                                 "(index) the cache by the sequences you continue")
            full = torch.cat([seen[:, 0, :, 0].long(), idx], dim=1)
        if full.shape[1] > self.block_size:
            raise ValueError(f"{full.shape[1]} positions exceed block_size {self.block_size}")
        logits = _logits_of(self.model(full))[:, -idx.shape[1]:]
        ids = full.to(torch.float32)[:, None, :, None]
        return logits, [{"k": ids, "v": ids.clone()}]


class _PrefixMean(nn.Module):
    def __init__(self, table):
        super().__init__()
        self.table = nn.Parameter(torch.as_tensor(table, dtype=torch.float32).clone(), requires_grad=False)
        self.vocab_size = self.table.shape[0]

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(1, ids.shape[1] + 1, dtype=torch.float32, device=ids.device)
        return self.table[ids].cumsum(dim=1) / positions[None, :, None]


class PrefixTableLM(RecomputedCache):
    """``PrefixTableLM(table, block_size)``: ``logits[b, t]`` is the mean of ``table[ids[b, s]]`` over s <= t,
    so the next token depends on the whole prefix (a search that continues a hypothesis from another one's
    cache goes wrong), with ``RecomputedCache``'s interface, ``calls`` and ``modes``."""

    def __init__(self, table, block_size: int = 64):
        super().__init__(_PrefixMean(table), block_size)


class CachedTableLM(RecomputedCache):
    """``CachedTableLM(table, block_size, dtype)``: ``TableLM(table, dtype)`` (a bigram table) behind
    ``RecomputedCache``'s interface, with its ``calls`` and ``modes``."""

    def __init__(self, table, block_size: int = 64, dtype: torch.dtype = torch.float32):
        super().__init__(TableLM(table, dtype), block_size)


class LogitsOnly(nn.Module):
    """``LogitsOnly(model)(ids)`` is ``model(ids)[0]``: the logits of a model that returns ``(logits, caches)``."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return _logits_of(self.model(ids))


def draw_counts(sampler, target, draft, prompt, n_draft: int, max_new_tokens: int, seed: int, draws: int) -> dict:
    """Call ``sampler(target, draft, prompt, n_draft, max_new_tokens, torch.Generator().manual_seed(seed + i))``
    for i in range(draws), where it runs, and return plain data: ``{"counts": {"a b c": n, ...}}`` (the new
    tokens of each draw, as a string of ids, counted), ``"target_calls"`` and ``"draft_calls"`` (the models'
    ``calls`` grown over all draws, when they record them)."""
    counts: dict[str, int] = {}
    target_before, draft_before = len(getattr(target, "calls", [])), len(getattr(draft, "calls", []))
    for i in range(draws):
        out = sampler(target, draft, prompt, n_draft, max_new_tokens, torch.Generator().manual_seed(seed + i))
        key = " ".join(str(int(t)) for t in torch.as_tensor(out).reshape(-1)[prompt.shape[-1]:])
        counts[key] = counts.get(key, 0) + 1
    return {"counts": counts, "target_calls": len(getattr(target, "calls", [])) - target_before,
            "draft_calls": len(getattr(draft, "calls", [])) - draft_before}
