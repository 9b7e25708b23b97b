"""Rescales to max_norm even when the norm is already below it."""
import torch


def clip_grad_norm(grads, max_norm):
    """Scale a list of gradient tensors together so that their global L2 norm is at most about max_norm.

    Args:
        grads: list of floating tensors (any shapes). Never modified.
        max_norm: float > 0.
    Returns:
        (clipped, total_norm): clipped is a new list of new tensors g * c with the one factor
        c = min(1, max_norm / (total_norm + 1e-6)); total_norm is a Python float, the norm before
        clipping, sqrt(sum over tensors of sum(g^2)) (0.0 for an empty list).
    Raises:
        ValueError: if max_norm <= 0.
    """
    if max_norm <= 0:
        raise ValueError(f"max_norm must be positive, got {max_norm}")
    total = sum(float(g.double().pow(2).sum()) for g in grads) ** 0.5
    factor = max_norm / (total + 1e-6)
    return [g * factor for g in grads], total
