"""Runs the model with autograd on (no torch.no_grad()), recording a graph it never uses."""
import torch


def generate(model, prompt_ids, n_new, temperature, generator):
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    ids = prompt_ids.clone()
    for _ in range(n_new):
        logits = model(ids[None])[0, -1].detach()
        if temperature == 0:
            next_id = logits.argmax()
        else:
            probs = torch.softmax(logits / temperature, dim=-1)
            next_id = torch.multinomial(probs, 1, generator=generator)[0]
        ids = torch.cat([ids, next_id.reshape(1).to(ids.dtype)])
    return ids
