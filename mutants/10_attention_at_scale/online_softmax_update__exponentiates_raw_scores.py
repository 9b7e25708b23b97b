"""Exponentiates the raw scores and divides by exp(new_max) afterwards: right on paper, inf for scores near 1000."""
import torch


def online_softmax_update(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    shift = torch.where(torch.isneginf(new_max), torch.zeros_like(new_max), new_max)
    new_sum = running_sum * torch.exp(running_max - shift) + torch.exp(block).sum(dim=-1) / torch.exp(shift)
    return new_max, new_sum
