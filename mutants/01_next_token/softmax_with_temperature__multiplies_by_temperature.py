"""Multiplies the logits by the temperature instead of dividing, so T < 1 flattens and T > 1 sharpens."""
import torch


def softmax_with_temperature(logits, temperature):
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    return torch.softmax(logits * temperature, dim=-1)
