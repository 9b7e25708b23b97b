"""Takes the log of the softmax: tiny probabilities underflow to 0 and give -inf instead of e.g. -1000."""
import torch


def log_softmax(logits):
    return torch.log(torch.softmax(logits, dim=-1))
