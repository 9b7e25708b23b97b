"""Computes the slopes with Python floats into a float64 tensor and returns float64, not the stated float32."""
import torch


def alibi_bias(T, n_heads):
    """The causal ALiBi bias, to be added to the attention scores of every head.

    Args:
        T: sequence length, an int >= 1.
        n_heads: number of heads h, a power of two (1, 2, 4, 8, ...).
    Returns:
        A new float32 tensor of shape (n_heads, T, T). Head s = 1, ..., h (index s - 1) has slope
        m_s = 2 ** (-8 * s / h), so head 1 is the steepest. For query i and key j:
            out[s - 1, i, j] = -m_s * (i - j)   if j <= i   (0 on the diagonal)
            out[s - 1, i, j] = -inf             if j > i    (a future key: masked)
        It can be passed as attn_mask to F.scaled_dot_product_attention, which adds it to q k^T / sqrt(d_k).
    """
    slopes = torch.tensor([2.0 ** (-8.0 * s / n_heads) for s in range(1, n_heads + 1)], dtype=torch.float64)
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    bias = -slopes[:, None, None] * (i - j).double()                             # (h, T, T)
    return bias.masked_fill(j > i, float("-inf"))
