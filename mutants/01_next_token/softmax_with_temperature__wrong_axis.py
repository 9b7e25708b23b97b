"""Applies the softmax over the first dimension, which is only right for a single 1-D row."""
import torch


def softmax_with_temperature(logits, temperature):
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    return torch.softmax(logits / temperature, dim=0)
