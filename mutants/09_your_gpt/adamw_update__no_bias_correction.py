"""Forgets the bias correction of m and v."""
import math

import torch


def adamw_update(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
    """One AdamW update of one parameter tensor (as torch.optim.AdamW does it), without modifying the inputs.

    Args:
        param, grad, exp_avg, exp_avg_sq: floating tensors of the same shape and dtype: the parameter,
            its gradient, and the running first and second moments before this update (zeros at step 1).
        step: int t >= 1, the number of this update (1 for the first).
        lr: float >= 0. betas: (beta1, beta2) in [0, 1). eps: float > 0. weight_decay: float >= 0.
    Returns:
        (new_param, new_exp_avg, new_exp_avg_sq): three new tensors:
        m = beta1 * exp_avg + (1 - beta1) * grad; v = beta2 * exp_avg_sq + (1 - beta2) * grad^2;
        new_param = param * (1 - lr * weight_decay) - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps).
    Raises:
        ValueError: if step < 1.
    """
    if step < 1:
        raise ValueError(f"step counts updates from 1, got {step}")
    beta1, beta2 = betas
    m = beta1 * exp_avg + (1 - beta1) * grad
    v = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
    m_hat = m
    v_hat = v
    new_param = param * (1 - lr * weight_decay) - lr * m_hat / (v_hat.sqrt() + eps)
    return new_param, m, v
