"""Does the update in float64 for accuracy and returns float64 tensors for float32 inputs."""
import torch


def online_softmax_update(running_max, running_sum, block):
    running_max, running_sum, block = running_max.double(), running_sum.double(), block.double()
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    shift = torch.where(torch.isneginf(new_max), torch.zeros_like(new_max), new_max)
    new_sum = running_sum * torch.exp(running_max - shift) + torch.exp(block - shift.unsqueeze(-1)).sum(dim=-1)
    return new_max, new_sum
