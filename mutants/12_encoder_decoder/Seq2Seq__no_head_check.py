"""Does not check that n_head divides d_model, so the error is nn.MultiheadAttention's AssertionError, not ValueError."""
import math

import torch
import torch.nn as nn


def sinusoidal_positions(T, d_model):
    """The fixed sine/cosine position table of "Attention is all you need" (given): (T, d_model) float32."""
    position = torch.arange(T, dtype=torch.float32)[:, None]
    frequency = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(T, d_model)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency[: d_model // 2])
    return table


class Seq2Seq(nn.Module):
    """An encoder-decoder transformer with one shared token embedding.

    Seq2Seq(vocab_size, d_model, n_head, n_layer, d_ff=None, bos_id=1, source_positions=True)
      embed: nn.Embedding(vocab_size, d_model), the only token table: it embeds the source and the
        decoder's input, and its weight is the output layer (logits = h @ embed.weight.T; no separate head).
      encoder: nn.ModuleList of n_layer EncoderBlock(d_model, n_head, d_ff); encoder_norm: nn.LayerNorm(d_model).
      decoder: nn.ModuleList of n_layer DecoderBlock(d_model, n_head, d_ff); decoder_norm: nn.LayerNorm(d_model).
      No other parameters. Positions come from sinusoidal_positions (no parameters): added to the decoder's
      input embeddings always, and to the source embeddings only when source_positions is True (with False
      the encoder sees its source as a bag of tokens).

    encode(src, src_padding_mask=None) -> memory (B, S, d_model): embed (+ positions), every encoder block
      with the padding mask, encoder_norm.
    cross_kv(memory) -> a list of n_layer pairs, pair i = decoder[i].cross_attn.project(memory, memory).
    decode(tgt_in, memory_kv, src_padding_mask=None) -> logits (B, T, vocab_size): tgt_in (B, T) is the
      decoder's input (BOS first); embed + positions 0..T-1, decoder block i with memory_kv[i] and the mask,
      decoder_norm, @ embed.weight.T. Position t predicts the token that follows tgt_in[:, :t+1].
    forward(src, tgt, src_padding_mask=None) -> logits (B, T, vocab_size) for teacher forcing. The decoder's
      input is tgt shifted right by one with bos_id in front, [bos_id, tgt[:, 0], ..., tgt[:, T-2]], so the
      logits at position t predict tgt[:, t] having seen only tgt[:, :t]. Equals
      decode(that input, cross_kv(encode(src, mask)), mask).
    src (B, S) and tgt (B, T) are int64, S and T may differ; the padding mask is True at source padding
    (the logits do not depend on the tokens at padding positions). Raises ValueError if n_head does not
    divide d_model.
    """

    def __init__(self, vocab_size, d_model, n_head, n_layer, d_ff=None, bos_id=1, source_positions=True):
        super().__init__()
        self.bos_id, self.source_positions = bos_id, source_positions
        self.embed = nn.Embedding(vocab_size, d_model)      # one table: source, decoder input, output layer
        self.encoder = nn.ModuleList(EncoderBlock(d_model, n_head, d_ff) for _ in range(n_layer))
        self.decoder = nn.ModuleList(DecoderBlock(d_model, n_head, d_ff) for _ in range(n_layer))
        self.encoder_norm, self.decoder_norm = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def encode(self, src, src_padding_mask=None):
        x = self.embed(src)
        if self.source_positions:
            x = x + sinusoidal_positions(src.shape[1], x.shape[-1]).to(x)
        for block in self.encoder:
            x = block(x, src_padding_mask)
        return self.encoder_norm(x)

    def cross_kv(self, memory):
        return [block.cross_attn.project(memory, memory) for block in self.decoder]

    def decode(self, tgt_in, memory_kv, src_padding_mask=None):
        y = self.embed(tgt_in)
        y = y + sinusoidal_positions(tgt_in.shape[1], y.shape[-1]).to(y)
        for block, kv in zip(self.decoder, memory_kv):
            y = block(y, memory_padding_mask=src_padding_mask, memory_kv=kv)
        return self.decoder_norm(y) @ self.embed.weight.T

    def forward(self, src, tgt, src_padding_mask=None):
        bos = torch.full_like(tgt[:, :1], self.bos_id)
        tgt_in = torch.cat([bos, tgt[:, :-1]], dim=1)
        return self.decode(tgt_in, self.cross_kv(self.encode(src, src_padding_mask)), src_padding_mask)
