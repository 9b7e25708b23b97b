"""Forgets the causal mask in the decoder's self-attention, so position t reads the target tokens after it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class DecoderBlock(nn.Module):
    """A Pre-LN decoder block: causal self-attention, then cross-attention to the source, then the FFN.

    DecoderBlock(d_model, n_head, d_ff=None)      d_ff defaults to 4 * d_model
      Submodules: norm1, norm2, norm3: nn.LayerNorm(d_model);
        self_attn: nn.MultiheadAttention(d_model, n_head, batch_first=True);
        cross_attn: your CrossAttention(d_model, n_head);
        linear1: nn.Linear(d_model, d_ff); linear2: nn.Linear(d_ff, d_model). Exact GELU, no dropout.
      (nn.TransformerDecoderLayer(..., norm_first=True) is the same block; its multihead_attn is our
      cross_attn with the three input projections kept in one matrix.)

    forward(x, memory=None, memory_padding_mask=None, memory_kv=None):
      x: (B, T, d_model), the target side. The source comes either as memory, (B, S, d_model), the
      encoder's output used as it is (not normalised again here), or as memory_kv, the pair
      self.cross_attn.project(memory, memory) computed once beforehand: give exactly one of the two, else
      ValueError. memory_padding_mask: None, or bool (B, S), True at source padding.
        h   = x + self_attn(norm1(x)) with a causal mask   (target position t reads positions <= t only)
        h   = h + cross_attn(norm2(h), memory)             (every non-padding source position, no causal mask)
        out = h + linear2(gelu(linear1(norm3(h))))
      Both ways of passing the source give the same result. Returns a new tensor (B, T, d_model).
    """

    def __init__(self, d_model, n_head, d_ff=None):
        super().__init__()
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.self_attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
        self.cross_attn = CrossAttention(d_model, n_head)
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x, memory=None, memory_padding_mask=None, memory_kv=None):
        if (memory is None) == (memory_kv is None):
            raise ValueError("give exactly one of memory and memory_kv")
        if memory_kv is None:
            memory_kv = self.cross_attn.project(memory, memory)
        T = x.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        h = self.norm1(x)
        x = x + self.self_attn(h, h, h, need_weights=False)[0]
        x = x + self.cross_attn.attend(self.norm2(x), *memory_kv, memory_padding_mask)
        return x + self.linear2(F.gelu(self.linear1(self.norm3(x))))
