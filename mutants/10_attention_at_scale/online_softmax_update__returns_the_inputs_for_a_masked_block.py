"""Skips a fully masked block by returning the running max and sum themselves, not new tensors."""
import torch


def online_softmax_update(running_max, running_sum, block):
    if torch.isneginf(block).all():
        return running_max, running_sum
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    shift = torch.where(torch.isneginf(new_max), torch.zeros_like(new_max), new_max)
    new_sum = running_sum * torch.exp(running_max - shift) + torch.exp(block - shift.unsqueeze(-1)).sum(dim=-1)
    return new_max, new_sum
