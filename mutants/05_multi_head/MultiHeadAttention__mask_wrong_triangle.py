"""Masks the past (keys j < i) instead of the future."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    """Batched multi-head self-attention: MultiHeadAttention(d_model, n_head, bias=True).

    Weight layout (the tests load weights by these names and shapes, so use exactly one of these):
      * separate projections (the layout of this notebook):
            q_proj, k_proj, v_proj, out_proj: each nn.Linear(d_model, d_model, bias=bias);
      * or fused input projections:
            qkv_proj: nn.Linear(d_model, 3 * d_model, bias=bias), weight = torch.cat([W_q, W_k, W_v])
            (rows 0:d are the queries, d:2d the keys, 2d:3d the values; the bias likewise),
            out_proj: nn.Linear(d_model, d_model, bias=bias).
      The tests read the parameter names to tell the layouts apart. No other parameters (a cached mask
      may be a buffer). With bias=False no projection has a bias. In every projection, output features
      i*d_k .. (i+1)*d_k - 1 (rows of the weight) belong to head i, d_k = d_model // n_head, and
      out_proj's input features (columns) i*d_k .. (i+1)*d_k - 1 read head i's output.

    forward(x, causal=False):
        x: floating tensor (B, T, d_model), T >= 1. Returns a new tensor (B, T, d_model), same dtype:
            head_i = softmax(Q_i K_i^T / sqrt(d_k) + M) V_i with Q = x W_q^T + b_q (head i = its
            i-th block of d_k features), likewise K and V; M = 0, or -inf above the diagonal when
            causal=True (position t attends to positions <= t only, so no row is ever fully masked);
            out = concat(head_1, ..., head_h) W_o^T + b_o.
        Differentiable with respect to x and every parameter; x is not modified.
    Raises:
        ValueError: in the constructor, if d_model is not divisible by n_head.
    """

    def __init__(self, d_model, n_head, bias=True):
        super().__init__()
        if d_model % n_head != 0:
            raise ValueError(f"d_model = {d_model} is not divisible by n_head = {n_head}")
        self.n_head = n_head
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, causal=False):
        T = x.shape[1]
        q = split_heads(self.q_proj(x), self.n_head)           # (B, h, T, d_k)
        k = split_heads(self.k_proj(x), self.n_head)
        v = split_heads(self.v_proj(x), self.n_head)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # (B, h, T, T), scaled by sqrt(d_k)
        if causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).tril(-1)
            scores = scores.masked_fill(future, float("-inf"))
        heads = scores.softmax(dim=-1) @ v                      # (B, h, T, d_k)
        return self.out_proj(merge_heads(heads))                # mix the heads: (B, T, d_model)
