"""Divides the caller's logits in place (logits /= T), changing the model's output for later use."""
import torch


def softmax_with_temperature(logits, temperature):
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    logits /= temperature
    return torch.softmax(logits, dim=-1)
