"""Scores the -100 positions too (no ignore_index): clamps them to token 0."""
import torch
import torch.nn.functional as F


def estimate_loss(model, batches):
    was_training = model.training
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in batches:
            logits = model(x)
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.clamp(min=0).reshape(-1)).item()
    model.train(was_training)
    return total / len(batches)
