"""Checks the temperature only inside the loop, so n_new = 0 with a negative temperature raises nothing."""
import torch


def generate(model, prompt_ids, n_new, temperature, generator):
    ids = prompt_ids.clone()
    with torch.no_grad():
        for _ in range(n_new):
            if temperature < 0:
                raise ValueError(f"temperature must be >= 0, got {temperature}")
            logits = model(ids[None])[0, -1]
            if temperature == 0:
                next_id = logits.argmax()
            else:
                probs = torch.softmax(logits / temperature, dim=-1)
                next_id = torch.multinomial(probs, 1, generator=generator)[0]
            ids = torch.cat([ids, next_id.reshape(1).to(ids.dtype)])
    return ids
