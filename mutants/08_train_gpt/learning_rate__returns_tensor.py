"""Computes the cosine with torch and returns a 0-dim tensor instead of a Python float."""
import math

import torch


def learning_rate(step, max_lr, min_lr, warmup_steps, max_steps):
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    if step >= max_steps:
        return min_lr
    progress = torch.tensor((step - warmup_steps) / (max_steps - warmup_steps), dtype=torch.float64)
    return min_lr + 0.5 * (1.0 + torch.cos(math.pi * progress)) * (max_lr - min_lr)
