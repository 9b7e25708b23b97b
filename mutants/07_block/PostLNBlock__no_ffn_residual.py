"""Forgets the residual around the FFN: y = LN2(FFN(x'))."""
import torch
import torch.nn as nn


class PostLNBlock(nn.Module):
    """A Post-LN transformer block (the 2017 arrangement):  x' = LN1(x + MHA(x));  y = LN2(x' + FFN(x')).

    PostLNBlock(d_model, n_head, d_ff=None, activation="gelu")
      Exactly the submodules and parameter names of PreLNBlock:
        ln1: LayerNorm(d_model); attn: nn.MultiheadAttention(d_model, n_head, batch_first=True);
        ln2: LayerNorm(d_model); ffn: FeedForward(d_model, d_ff, activation) with fc1, fc2
        (d_ff = 4 * d_model when None). No other parameters, no dropout.

    forward(x, causal=False):
        x: floating tensor (B, T, d_model), T >= 1, float32 or float64 (after .double()).
        Self-attention on x itself (query = key = value = x); with causal=True position t attends to
        positions <= t only. ln1 normalises x + MHA(x); ln2 normalises x' + FFN(x').
        Returns a new tensor (B, T, d_model) of x's dtype; x is not modified. Differentiable.
    """

    def __init__(self, d_model, n_head, d_ff=None, activation="gelu"):
        super().__init__()
        self.ln1 = LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
        self.ln2 = LayerNorm(d_model)
        self.ffn = FeedForward(d_model, d_ff, activation)

    def forward(self, x, causal=False):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1) if causal else None
        x = self.ln1(x + self.attn(x, x, x, attn_mask=mask, need_weights=False)[0])
        return self.ln2(self.ffn(x))
