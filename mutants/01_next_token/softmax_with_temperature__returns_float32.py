"""Converts the logits to float32, so float64 logits give float32 probabilities."""
import torch


def softmax_with_temperature(logits, temperature):
    if temperature <= 0:
        raise ValueError("temperature must be > 0")
    return torch.softmax(logits.float() / temperature, dim=-1)
