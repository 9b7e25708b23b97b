"""Never checks the temperature, so T = 0 silently returns nan and negative T inverts the ranking."""
import torch


def softmax_with_temperature(logits, temperature):
    return torch.softmax(logits / temperature, dim=-1)
