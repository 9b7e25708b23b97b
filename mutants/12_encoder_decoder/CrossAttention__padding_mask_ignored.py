"""Ignores the padding mask, so queries attend to padding positions."""
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    """Multi-head attention from a target sequence (the queries) to a source sequence (the keys and values).

    CrossAttention(d_model, n_head, kdim=None, vdim=None)
      kdim and vdim (default d_model) are the widths of the key and value inputs.
      Parameters, each an nn.Linear with a bias: q_proj (d_model -> d_model), k_proj (kdim -> d_model),
      v_proj (vdim -> d_model), out_proj (d_model -> d_model); no others. Raises ValueError if n_head does
      not divide d_model. Head h uses features h*d_head:(h+1)*d_head of each projection
      (d_head = d_model // n_head), as nn.MultiheadAttention does.

    project(key, value) -> (k, v): key (B, S, kdim) and value (B, S, vdim) projected and split into heads,
      each of shape (B, n_head, S, d_head). Compute it once per source and reuse the pair.

    attend(x, k, v, padding_mask=None, return_weights=False):
      x: (B, T, d_model), the queries' input (T may differ from S); k, v: as project returns them.
      padding_mask: None, or bool (B, S) with True where the source position is padding: no query
      attends to it. There is no causal mask: every target position may read every non-padding source
      position. Scores q.k / sqrt(d_head), softmax over the source axis, weights @ v, heads concatenated,
      out_proj. A row whose source is all padding attends to nothing: its weights are all zero, so its
      output is exactly out_proj.bias (never NaN).
      Returns the output (B, T, d_model), or (output, weights) when return_weights is True, with weights
      of shape (B, n_head, T, S) (zero at padding positions).

    forward(x, key, value, padding_mask=None) = attend(x, *project(key, value), padding_mask). Where no
      source is all padding this equals nn.MultiheadAttention(d_model, n_head, kdim=kdim, vdim=vdim,
      batch_first=True)(x, key, value, key_padding_mask=padding_mask)[0] with the same weights.
    Works in float32 and float64 (the dtype of x and the module's); the inputs are not modified.
    """

    def __init__(self, d_model, n_head, kdim=None, vdim=None):
        super().__init__()
        if d_model % n_head != 0:
            raise ValueError(f"n_head={n_head} does not divide d_model={d_model}")
        self.d_model, self.n_head, self.d_head = d_model, n_head, d_model // n_head
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model if kdim is None else kdim, d_model)
        self.v_proj = nn.Linear(d_model if vdim is None else vdim, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def project(self, key, value):
        B, S, _ = key.shape
        k = self.k_proj(key).view(B, S, self.n_head, self.d_head).transpose(1, 2)
        v = self.v_proj(value).view(B, S, self.n_head, self.d_head).transpose(1, 2)
        return k, v

    def attend(self, x, k, v, padding_mask=None, return_weights=False):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_head, self.d_head).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)     # an all-padding row: 0, not NaN
        out = self.out_proj((weights @ v).transpose(1, 2).reshape(B, T, self.d_model))
        return (out, weights) if return_weights else out

    def forward(self, x, key, value, padding_mask=None):
        return self.attend(x, *self.project(key, value), padding_mask)
