"""Shifts by the new maximum even where it is -inf, so a fully masked start gives exp(-inf + inf) = NaN."""
import torch


def online_softmax_update(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    new_sum = running_sum * torch.exp(running_max - new_max) + torch.exp(block - new_max.unsqueeze(-1)).sum(dim=-1)
    return new_max, new_sum
