"""A small GPT for generation and cost experiments, built from PyTorch's own parts.

``TinyGPT`` is a decoder-only transformer (token and learned position embeddings, Pre-LN blocks,
a head tied to the token embedding). Its attention has two paths:

* ``model(idx)``: the whole sequence at once, with PyTorch's fused causal attention
  (``F.scaled_dot_product_attention(..., is_causal=True)``). This is the reference.
* ``model(idx, caches)``: the tokens ``idx`` come *after* the ones the per-layer ``caches`` already
  hold; each layer hands its new queries, keys and values and its cache to the ``attention``
  function given to the constructor, ``attention(q, k, v, cache) -> (out, new_cache)``, and the
  model returns the new caches. This class holds no cache logic of its own: that function is the
  exercise (notebook 10).

It records the shape of every ``idx`` it is called with in ``calls`` (a test instrument: did a loop
feed one token per step?), and in ``modes`` one dict ``{"grad_enabled": bool, "training": bool,
"modules_in_training": [names]}`` per call: whether autograd was recording, whether the module was in training
mode during that call, and which of its modules were ("" is the model itself; ``model.training = False`` leaves
the blocks in training mode, ``model.eval()`` does not). ``modules_in_training()`` gives that list now. This module holds no exercise solution.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class _Block(nn.Module):
    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.ln_1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def _heads(self, x: torch.Tensor) -> torch.Tensor:  # (B, t, d) -> (B, h, t, d / h)
        B, t, d = x.shape
        return x.view(B, t, self.n_head, d // self.n_head).transpose(1, 2)

    def forward(self, x: torch.Tensor, cache=None, attention=None, cached: bool = False):
        B, t, d = x.shape
        q, k, v = (self._heads(part) for part in self.qkv(self.ln_1(x)).split(d, dim=2))
        if cached:
            out, cache = attention(q, k, v, cache)
        else:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(out.transpose(1, 2).reshape(B, t, d))
        return x + self.mlp(self.ln_2(x)), cache


class TinyGPT(nn.Module):
    """``TinyGPT(vocab_size, d_model, n_head, n_layer, block_size, attention=None, seed=0)``.

    ``forward(idx)`` -> ``(logits, None)``; ``forward(idx, caches)`` -> ``(logits, new_caches)``, where
    ``caches`` is a list of one entry per layer (``None`` before the first token) and the positions of
    ``idx`` continue after the tokens already cached. The weights are drawn from ``seed``, so two models
    built with the same arguments are equal.
    """

    def __init__(self, vocab_size: int, d_model: int, n_head: int, n_layer: int, block_size: int,
                 attention=None, seed: int = 0):
        super().__init__()
        if d_model % n_head:
            raise ValueError(f"the width {d_model} must be a multiple of the number of heads {n_head}")
        generator_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        self.vocab_size, self.d_model, self.n_head = vocab_size, d_model, n_head
        self.n_layer, self.block_size, self.attention = n_layer, block_size, attention
        self.wte = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Embedding(block_size, d_model)
        self.blocks = nn.ModuleList(_Block(d_model, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model)
        for name, parameter in self.named_parameters():
            if parameter.dim() == 2:   # embeddings and weights: N(0, 0.02), residual projections smaller
                std = 0.02 / math.sqrt(2 * n_layer) if name.endswith(("proj.weight", "mlp.2.weight")) else 0.02
                nn.init.normal_(parameter, std=std)
            elif name.endswith("bias"):
                nn.init.zeros_(parameter)
        torch.random.set_rng_state(generator_state)
        self.calls: list[tuple[int, ...]] = []
        self.modes: list[dict] = []

    def forward(self, idx: torch.Tensor, caches: list | None = None):
        self.calls.append(tuple(idx.shape))
        self.modes.append({"grad_enabled": bool(torch.is_grad_enabled()), "training": bool(self.training),
                           "modules_in_training": self.modules_in_training()})
        cached = caches is not None
        if cached and (self.attention is None or len(caches) != self.n_layer):
            raise ValueError("the cached path needs attention= at construction and one cache entry per layer")
        start = 0
        if cached and caches[0] is not None:
            start = caches[0]["k"].shape[2]
        t = idx.shape[1]
        if start + t > self.block_size:
            raise ValueError(f"positions {start}..{start + t - 1} exceed block_size {self.block_size}")
        x = self.wte(idx) + self.wpe(torch.arange(start, start + t, device=idx.device))
        new_caches = []
        for index, block in enumerate(self.blocks):
            x, cache = block(x, caches[index] if cached else None, self.attention, cached)
            new_caches.append(cache)
        logits = F.linear(self.ln_f(x), self.wte.weight)     # the head is the token embedding, tied
        return logits, (new_caches if cached else None)

    def modules_in_training(self) -> list[str]:
        """The names of the modules (this one is "") that are in training mode now, in module order."""
        return [name for name, module in self.named_modules() if module.training]

    def matmul_parameters(self) -> int:
        """Parameters that multiply activations: every Linear weight and the (tied) head, not the
        embedding tables' lookups, biases or LayerNorm gains (the 'N' of 6N FLOPs per token)."""
        linear = sum(m.weight.numel() for m in self.modules() if isinstance(m, nn.Linear))
        return linear + self.wte.weight.numel()
