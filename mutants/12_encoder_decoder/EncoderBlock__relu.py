"""Uses ReLU in the feed-forward network instead of GELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class EncoderBlock(nn.Module):
    """A Pre-LN encoder block: bidirectional self-attention with a key-padding mask, then the FFN.

    EncoderBlock(d_model, n_head, d_ff=None)      d_ff defaults to 4 * d_model
      Submodules, with the names and shapes of nn.TransformerEncoderLayer(d_model, n_head, d_ff,
      dropout=0.0, activation="gelu", batch_first=True, norm_first=True), so one state_dict loads into both:
        norm1, norm2: nn.LayerNorm(d_model);
        self_attn: nn.MultiheadAttention(d_model, n_head, batch_first=True);
        linear1: nn.Linear(d_model, d_ff); linear2: nn.Linear(d_ff, d_model).
      No dropout; the activation is the exact GELU (F.gelu, not the tanh approximation).

    forward(x, padding_mask=None):
      x: (B, S, d_model); padding_mask: None, or bool (B, S), True at source padding: no position attends
      to a padding position (padding positions still get an output, which later layers ignore).
        h   = x + self_attn(norm1(x))          every position reads every non-padding position: no causal mask
        out = h + linear2(gelu(linear1(norm2(h))))
      Returns a new tensor (B, S, d_model); x is not modified.
    """

    def __init__(self, d_model, n_head, d_ff=None):
        super().__init__()
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.self_attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x, padding_mask=None):
        h = self.norm1(x)
        x = x + self.self_attn(h, h, h, key_padding_mask=padding_mask, need_weights=False)[0]
        return x + self.linear2(F.relu(self.linear1(self.norm2(x))))
