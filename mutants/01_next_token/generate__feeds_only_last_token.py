"""Feeds the model only the last token at each step, which is right for a bigram model and wrong for any model with context."""
import torch


def generate(model, prompt_ids, n_new, temperature, generator):
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    ids = prompt_ids.clone()
    with torch.no_grad():
        for _ in range(n_new):
            logits = model(ids[-1:][None])[0, -1]
            if temperature == 0:
                next_id = logits.argmax()
            else:
                next_id = torch.multinomial(torch.softmax(logits / temperature, dim=-1), 1, generator=generator)[0]
            ids = torch.cat([ids, next_id.reshape(1).to(ids.dtype)])
    return ids
