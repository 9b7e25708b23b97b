"""Skips ignored positions in the sum but still divides by B * T."""
import torch
import torch.nn.functional as F


def lm_loss(logits, targets, ignore_index=-100):
    per_token = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                ignore_index=ignore_index, reduction="none")
    return per_token.sum() / targets.numel()
