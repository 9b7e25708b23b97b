"""Treats warmup_steps = 0 as a one-step warm-up from 0: the first update of a schedule without warm-up gets rate 0."""
import math


def learning_rate(step, max_lr, min_lr, warmup_steps, max_steps):
    if step <= warmup_steps and warmup_steps == 0:
        return 0.0
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    if step >= max_steps:
        return min_lr
    progress = (step - warmup_steps) / (max_steps - warmup_steps)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (max_lr - min_lr)
