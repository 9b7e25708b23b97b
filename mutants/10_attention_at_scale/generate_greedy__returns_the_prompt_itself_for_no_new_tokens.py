"""Returns the prompt tensor itself when max_new_tokens is 0, not a new tensor."""
import torch


def generate_greedy(model, idx, max_new_tokens):
    if idx.shape[1] + max_new_tokens > model.block_size:
        raise ValueError("too long for the model")
    if max_new_tokens == 0:
        return idx
    was_training = model.training
    model.eval()
    tokens = [idx]
    with torch.no_grad():
        logits, caches = model(idx, [None] * model.n_layer)
        for step in range(max_new_tokens):
            next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)
            tokens.append(next_token)
            if step + 1 < max_new_tokens:
                logits, caches = model(next_token, caches)
    model.train(was_training)
    return torch.cat(tokens, dim=1)
