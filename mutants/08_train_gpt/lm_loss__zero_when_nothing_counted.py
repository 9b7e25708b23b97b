"""Clamps the number of counted positions to at least 1, so a batch with every target ignored gives 0 instead of NaN."""
import torch
import torch.nn.functional as F


def lm_loss(logits, targets, ignore_index=-100):
    mask = targets != ignore_index
    logp = torch.log_softmax(logits, dim=-1).gather(-1, targets.masked_fill(~mask, 0)[..., None])[..., 0]
    return -(logp * mask).sum() / mask.sum().clamp(min=1)
