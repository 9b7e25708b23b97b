"""Writes the softmax as exp / sum without the max-shift, so small temperatures overflow to nan."""
import torch


def softmax_with_temperature(logits, temperature):
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    e = torch.exp(logits / temperature)
    return e / e.sum(dim=-1, keepdim=True)
