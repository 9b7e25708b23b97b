"""Adds the new block's terms to the old sum without rescaling it by exp(old_max - new_max)."""
import torch


def online_softmax_update(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    shift = torch.where(torch.isneginf(new_max), torch.zeros_like(new_max), new_max)
    new_sum = running_sum + torch.exp(block - shift.unsqueeze(-1)).sum(dim=-1)
    return new_max, new_sum
