"""Multiplies the logits by the temperature instead of dividing them."""
import torch


def generate(model, prompt_ids, n_new, temperature, generator):
    if temperature < 0:
        raise ValueError("temperature must be >= 0")
    ids = prompt_ids.clone()
    with torch.no_grad():
        for _ in range(n_new):
            logits = model(ids[None])[0, -1]
            if temperature == 0:
                next_id = logits.argmax()
            else:
                probs = torch.softmax(logits * temperature, dim=-1)
                next_id = torch.multinomial(probs, 1, generator=generator)[0]
            ids = torch.cat([ids, next_id.reshape(1)])
    return ids
