"""Rescales and accumulates into the running_sum argument in place (mul_/add_) and returns it."""
import torch


def online_softmax_update(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    shift = torch.where(torch.isneginf(new_max), torch.zeros_like(new_max), new_max)
    running_sum.mul_(torch.exp(running_max - shift)).add_(torch.exp(block - shift.unsqueeze(-1)).sum(dim=-1))
    return new_max, running_sum
