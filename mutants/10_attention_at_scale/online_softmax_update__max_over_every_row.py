"""Takes the block's maximum over the whole tensor instead of row by row."""
import torch


def online_softmax_update(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.max().expand_as(running_max))
    shift = torch.where(torch.isneginf(new_max), torch.zeros_like(new_max), new_max)
    new_sum = running_sum * torch.exp(running_max - shift) + torch.exp(block - shift.unsqueeze(-1)).sum(dim=-1)
    return new_max, new_sum
