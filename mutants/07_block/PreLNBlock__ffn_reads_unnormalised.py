"""Feeds the FFN the raw stream: x' + FFN(x') with no ln2."""
import torch
import torch.nn as nn


class PreLNBlock(nn.Module):
    """A Pre-LN transformer block:  x' = x + MHA(LN1(x));  y = x' + FFN(LN2(x')).

    PreLNBlock(d_model, n_head, d_ff=None, activation="gelu")
      Submodules, with exactly these names (the tests load a state_dict by them):
        ln1:  LayerNorm(d_model)      -> ln1.weight, ln1.bias                       (d_model,)
        attn: nn.MultiheadAttention(d_model, n_head, batch_first=True)  (bias, no dropout)
              -> attn.in_proj_weight (3 d_model, d_model), attn.in_proj_bias (3 d_model,),
                 attn.out_proj.weight (d_model, d_model), attn.out_proj.bias (d_model,)
        ln2:  LayerNorm(d_model)      -> ln2.weight, ln2.bias                       (d_model,)
        ffn:  FeedForward(d_model, d_ff, activation)
              -> ffn.fc1.weight (d_ff, d_model), ffn.fc1.bias (d_ff,), ffn.fc2.weight (d_model, d_ff),
                 ffn.fc2.bias (d_model,)            (d_ff = 4 * d_model when None)
      No other parameters. Your LayerNorm/FeedForward or nn.LayerNorm / an equivalent module with the
      same names all work. No dropout anywhere.

    forward(x, causal=False):
        x: floating tensor (B, T, d_model), T >= 1, float32 or float64 (after .double()).
        Self-attention on LN1(x) as query, key and value; with causal=True position t attends to
        positions <= t only (a boolean attn_mask, True above the diagonal); with causal=False to all.
        Returns a new tensor (B, T, d_model) of x's dtype; x is not modified. Differentiable with
        respect to x and every parameter.
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
        h = self.ln1(x)                                        # the sublayer reads a normalised copy ...
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]   # ... and adds to the stream
        return x + self.ffn(x)
