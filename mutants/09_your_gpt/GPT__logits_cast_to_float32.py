"""Casts the logits to float32 whatever the parameters' dtype (a float64 model returns float32 logits)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    # Multi-head self-attention (notebook 05) from PyTorch parts; causal unless causal=False.
    # rope: None, or a function that rotates queries and keys of shape (B, H, T, D) by their positions
    # (your apply_rope from notebook 06; this notebook does not contain one).
    def __init__(self, n_embd, n_head, causal=True, rope=None):
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f"n_head={n_head} must divide n_embd={n_embd}")
        self.n_head, self.causal, self.rope = n_head, causal, rope
        self.qkv = nn.Linear(n_embd, 3 * n_embd, bias=False)   # the three projections in one matmul
        self.proj = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        if self.rope is not None:
            q, k = self.rope(q), self.rope(k)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class FeedForward(nn.Module):
    # Position-wise feed-forward network (notebook 07): C -> d_ff -> C with a GELU.
    def __init__(self, n_embd, d_ff):
        super().__init__()
        self.fc, self.proj = nn.Linear(n_embd, d_ff, bias=False), nn.Linear(d_ff, n_embd, bias=False)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


# Which class builds each part of a block (sections 9 and 10 switch these to yours). "rope" is the function
# that rotates queries and keys when positions="rope": none is given here; it can only be yours (notebook 06).
PARTS = {"norm": nn.LayerNorm, "attention": CausalSelfAttention, "ffn": FeedForward, "rope": None}


def make_norm(n_embd, parts=None):
    return (parts or PARTS)["norm"](n_embd)


class Block(nn.Module):
    # Pre-LN block (notebook 07): x + attn(ln1(x)), then + ffn(ln2(x)).
    def __init__(self, n_embd, n_head, causal=True, rope=False, parts=None):
        super().__init__()
        parts = parts or PARTS
        self.n_embd = n_embd
        self.ln1, self.ln2 = make_norm(n_embd, parts), make_norm(n_embd, parts)
        rotate = parts.get("rope") if rope else None
        if rope and rotate is None:
            raise ValueError("rope=True needs a RoPE function in parts['rope'] (your apply_rope from notebook 06, "
                             "loaded in section 9); this notebook gives none")
        self.attn = parts["attention"](n_embd, n_head, causal=causal, rope=rotate)
        self.ffn = parts["ffn"](n_embd, 4 * n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))

    def residual_weights(self):
        # The weights of the two projections that write into the residual stream: the attention's last
        # linear layer, and the feed-forward network's layer back to the width C (out_features == C).
        attn = [m for m in self.attn.modules() if isinstance(m, nn.Linear)][-1]
        down = [m for m in self.ffn.modules() if isinstance(m, nn.Linear) and m.out_features == self.n_embd][-1]
        return [attn.weight, down.weight]


class GPT(nn.Module):
    """A decoder-only transformer language model assembled from the parts above.

    GPT(vocab_size, block_size, n_layer=2, n_head=4, n_embd=64, positions="learned", causal=True, parts=None)

    Args:
        vocab_size: V >= 1. block_size: T_max >= 1, the longest input. n_layer: N >= 1 blocks.
        n_head: H heads (divides n_embd). n_embd: C, the width.
        positions: "learned" (a table of T_max learned position vectors, the default), "rope" (no table;
            every block's attention rotates queries and keys: Block(..., rope=True), which raises
            ValueError unless parts["rope"] holds a RoPE function) or "none" (no position information).
        causal: passed to every Block (False only for the ablation of section 9).
        parts: passed to every Block and to make_norm (None means PARTS).
    Attributes (these names; tests read the parameters by them):
        tok_emb: nn.Embedding(V, C). pos_emb: nn.Embedding(T_max, C) for "learned", else None.
        blocks: nn.ModuleList of N Block(C, H, causal=causal, rope=(positions == "rope"), parts=parts).
        ln_f: make_norm(C, parts), the final norm. head: nn.Linear(C, V, bias=False) whose weight IS
        tok_emb.weight (one Parameter object, counted once).
    Initialisation: every nn.Linear and nn.Embedding weight ~ N(0, 0.02^2), every Linear bias 0, norms as
        built (gain 1, shift 0); then each block's residual_weights() ~ N(0, (0.02 / sqrt(2 N))^2).
    forward(idx, targets=None):
        idx: int64 (B, T) with 1 <= T <= T_max; targets: None or int64 (B, T).
        Returns (logits, loss): logits float32 (B, T, V) = head(ln_f(h_N)) with h_0 = tok_emb(idx)
        (+ pos_emb(0..T-1) for "learned"); loss = None without targets, else the mean cross-entropy
        over all B * T positions (a 0-d tensor that backpropagates).
    Raises:
        ValueError: positions not one of the three names, or "rope" without parts["rope"] (both at
            construction, the latter raised by Block); T > T_max (in forward).
    """

    def __init__(self, vocab_size, block_size, n_layer=2, n_head=4, n_embd=64, positions="learned", causal=True,
                 parts=None):
        super().__init__()
        if positions not in ("learned", "rope", "none"):
            raise ValueError(f"positions must be 'learned', 'rope' or 'none', not {positions!r}")
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(block_size, n_embd) if positions == "learned" else None
        self.blocks = nn.ModuleList([Block(n_embd, n_head, causal=causal, rope=positions == "rope", parts=parts)
                                     for _ in range(n_layer)])
        self.ln_f = make_norm(n_embd, parts)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight                       # tied: one Parameter
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        for block in self.blocks:
            for weight in block.residual_weights():
                nn.init.normal_(weight, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def forward(self, idx, targets=None):
        T = idx.shape[1]
        if T > self.block_size:
            raise ValueError(f"sequence of {T} tokens is longer than block_size={self.block_size}")
        x = self.tok_emb(idx)
        if self.pos_emb is not None:
            x = x + self.pos_emb(torch.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x)).float()
        loss = None if targets is None else F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss
