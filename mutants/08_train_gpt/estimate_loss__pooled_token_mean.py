"""Averages over all counted positions of all batches (pooled), not over the batches' means."""
import torch
import torch.nn.functional as F


def estimate_loss(model, batches):
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for x, y in batches:
            logits = model(x)
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-100,
                                     reduction="sum").item()
            count += int((y != -100).sum())
    model.train(was_training)
    return total / count
