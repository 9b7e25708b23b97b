"""Splits with a single reshape to (B, h, T, d_k), so each 'head' mixes features of different tokens and heads."""
import torch


def split_heads(x, n_head):
    """Split the features of every token into n_head heads and make the heads a batch axis.

    Args:
        x: tensor of shape (B, T, d_model), any dtype, contiguous or not; d_model must be a
            multiple of n_head.
        n_head: the number of heads h, a positive int.
    Returns:
        Tensor of shape (B, h, T, d_k), d_k = d_model // h, same dtype and device, with
        out[b, i, t, :] == x[b, t, i * d_k:(i + 1) * d_k]: head i owns the i-th block of d_k
        consecutive features. It may be a view of x (the usual reshape + transpose gives a
        non-contiguous view, no copy) or a new tensor; callers must not rely on either. x is not
        modified. Differentiable.
    Raises:
        ValueError: if d_model is not divisible by n_head.
    """
    B, T, d_model = x.shape
    if d_model % n_head != 0:
        raise ValueError(f"d_model = {d_model} is not divisible by n_head = {n_head}")
    # Cut the feature axis into h blocks of d_k: (B, T, h, d_k); then swap the token and head axes.
    return x.reshape(B, n_head, T, d_model // n_head)


def merge_heads(x):
    """Concatenate the heads again: the exact inverse of split_heads.

    Args:
        x: tensor of shape (B, h, T, d_k), any dtype, contiguous or not (split_heads' output and
            attention outputs usually are not).
    Returns:
        Tensor of shape (B, T, h * d_k), same dtype and device, with
        out[b, t, i * d_k:(i + 1) * d_k] == x[b, i, t, :]. Because the head axis has to move back
        next to the feature axis, this is in general a new (contiguous) tensor; when the memory
        already has that order (e.g. x came straight from split_heads) it may be a view. x is not
        modified. Differentiable.
    """
    B, h, T, d_k = x.shape
    # Undo the steps in reverse order: heads back behind the tokens, then join (h, d_k) into one axis.
    return x.reshape(B, T, h * d_k)
