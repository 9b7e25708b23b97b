"""Shifts the caller's logits in place (logits -= max), which the contract forbids."""
import torch


def log_softmax(logits):
    """Numerically stable log-softmax over the last dimension.

    Args:
        logits: floating tensor of shape (..., V), V >= 1, unnormalised scores. Entries may be -inf
            (a token ruled out) as long as every row has at least one finite entry.
    Returns:
        A new tensor (the input is not modified) of the same shape and dtype, with
        out[..., j] = logits[..., j] - log(sum_k exp(logits[..., k])),
        so that out.exp().sum(dim=-1) is 1 for every row. Exact even for logits like +-1000 (no inf or
        nan from overflow); -inf entries give -inf; differentiable (torch operations only).
    """
    # Shifting a row by a constant leaves its softmax unchanged; shifting by the row maximum makes
    # the largest exponent exp(0) = 1, so nothing overflows and the sum is >= 1 (no log 0).
    logits -= logits.max(dim=-1, keepdim=True).values
    shifted = logits
    return shifted - shifted.exp().sum(dim=-1, keepdim=True).log()
