"""Generates with autograd recording: no torch.no_grad() around the model calls."""
import torch


def generate_greedy(model, idx, max_new_tokens):
    if idx.shape[1] + max_new_tokens > model.block_size:
        raise ValueError("too long for the model")
    was_training = model.training
    model.eval()
    tokens = [idx]
    if True:
        logits, caches = model(idx, [None] * model.n_layer)
        for step in range(max_new_tokens):
            next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)
            tokens.append(next_token)
            if step + 1 < max_new_tokens:
                logits, caches = model(next_token, caches)
    model.train(was_training)
    return torch.cat(tokens, dim=1)
