"""Divides the probabilities (not the logits) by T and renormalises, which undoes the temperature."""
import torch


def softmax_with_temperature(logits, temperature):
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    probs = torch.softmax(logits, dim=-1) / temperature
    return probs / probs.sum(dim=-1, keepdim=True)
