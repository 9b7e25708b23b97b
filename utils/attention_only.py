"""Attention-only transformers, the simplest models in which heads can be read off one by one.

``AttentionOnlyTransformer(vocab_size, d_model, n_head, n_layer, block_size, seed=0, positions="residual")``:
token and learned position embeddings, ``n_layer`` causal multi-head attention layers added to the
residual stream (no MLPs, no LayerNorm, so every path from input to output goes through heads), and an
unembedding. Built from PyTorch's own parts (``F.scaled_dot_product_attention``).

Where the position vectors go:

* ``positions="residual"`` (GPT-2's way): added to the token embeddings, so they are part of the
  residual stream, and any head can copy them forward;
* ``positions="attention"``: added only to what the queries and keys of every layer are computed from
  (Shortformer's "position-infused attention"). Heads can still *find* positions, but the values, and
  so the residual stream, carry only token information, as with RoPE or ALiBi.

For looking inside:

* ``model.layers[l].head_outputs`` is an ``nn.Identity`` applied to the heads' outputs, shape
  ``(B, n_head, T, d_head)``, just before the output projection: a forward hook there sees (and may
  replace) what each head writes;
* ``model.patterns(idx)``: every layer's attention patterns, ``(B, n_head, T, T)`` each;
* ``model.modes``: one dict ``{"grad_enabled": bool, "training": bool}`` per call of the model (a test
  instrument: was autograd recording, was the module in training mode during that call?);
* ``model.ov_weights(layer)``: ``(W_E, W_V, W_O, W_U)`` in the row-vector convention
  (``x @ W``) of notebook 11.

This module holds no exercise solution.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        if d_model % n_head:
            raise ValueError(f"the width {d_model} must be a multiple of the number of heads {n_head}")
        self.n_head, self.d_head = n_head, d_model // n_head
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)
        self.head_outputs = nn.Identity()   # the hook point: (B, n_head, T, d_head)

    def _split(self, x: torch.Tensor, positions: torch.Tensor | None = None):
        B, T, d = x.shape
        if positions is None:
            parts = self.qkv(x).split(d, dim=2)
        else:   # positions inform the queries and keys only
            w_q, w_k, w_v = self.qkv.weight.split(d, dim=0)
            parts = (F.linear(x + positions, w_q), F.linear(x + positions, w_k), F.linear(x, w_v))
        return [part.view(B, T, self.n_head, self.d_head).transpose(1, 2) for part in parts]

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self._split(x, positions)
        heads = self.head_outputs(F.scaled_dot_product_attention(q, k, v, is_causal=True))
        return self.out(heads.transpose(1, 2).reshape(B, T, d))

    def pattern(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """The attention weights (B, n_head, T, T): attention applied to the identity matrix as values."""
        q, k, _ = self._split(x, positions)
        T = x.shape[1]
        eye = torch.eye(T, dtype=x.dtype, device=x.device).expand(q.shape[0], self.n_head, T, T)
        return F.scaled_dot_product_attention(q, k, eye, is_causal=True, scale=self.d_head ** -0.5)


class AttentionOnlyTransformer(nn.Module):
    def __init__(self, vocab_size: int, d_model: int, n_head: int, n_layer: int, block_size: int, seed: int = 0,
                 positions: str = "residual"):
        super().__init__()
        if positions not in ("residual", "attention"):
            raise ValueError(f"positions must be 'residual' or 'attention', not {positions!r}")
        self.positions = positions
        state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        self.vocab_size, self.n_head, self.n_layer, self.block_size = vocab_size, n_head, n_layer, block_size
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(block_size, d_model)
        self.layers = nn.ModuleList(CausalSelfAttention(d_model, n_head) for _ in range(n_layer))
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)   # PyTorch's default initialisation
        torch.random.set_rng_state(state)
        self.modes: list[dict] = []

    def _positions(self, idx: torch.Tensor) -> torch.Tensor:
        return self.pos(torch.arange(idx.shape[1], device=idx.device))

    def residual(self, idx: torch.Tensor, upto: int | None = None) -> torch.Tensor:
        """The residual stream before layer ``upto`` (all layers when None)."""
        if self.positions == "residual":
            x, infused = self.embed(idx) + self._positions(idx), None
        else:
            x, infused = self.embed(idx), self._positions(idx)
        for layer in self.layers[:upto]:
            x = x + layer(x, infused)
        return x

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        self.modes.append({"grad_enabled": bool(torch.is_grad_enabled()), "training": bool(self.training)})
        return self.unembed(self.residual(idx))

    @torch.no_grad()
    def patterns(self, idx: torch.Tensor) -> list[torch.Tensor]:
        infused = self._positions(idx) if self.positions == "attention" else None
        return [layer.pattern(self.residual(idx, upto=index), infused) for index, layer in enumerate(self.layers)]

    def ov_weights(self, layer: int):
        """``(W_E (V, d), W_V (d, d), W_O (d, d), W_U (d, V))`` as plain tensors, for ``x @ W``.

        ``x @ W_V`` gives every head's value vector side by side (head h: columns h*d_head ..
        (h+1)*d_head - 1); the heads' outputs side by side ``@ W_O`` give what the layer adds to the
        residual stream (head h: rows h*d_head .. (h+1)*d_head - 1).
        """
        attention = self.layers[layer]
        d = self.embed.weight.shape[1]
        w_v = attention.qkv.weight[2 * d:].T
        return (self.embed.weight.detach().clone(), w_v.detach().clone(), attention.out.weight.T.detach().clone(),
                self.unembed.weight.T.detach().clone())
