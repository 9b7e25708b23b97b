"""Measures top-p on the full softmax, not on the probabilities renormalised after top-k."""
import torch


def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    scaled = logits / temperature
    sorted_logits, order = torch.sort(scaled, dim=-1, descending=True, stable=True)
    keep = torch.ones_like(sorted_logits, dtype=torch.bool)
    full = torch.softmax(sorted_logits, dim=-1)
    if top_k is not None:
        keep[..., top_k:] = False
    if top_p is not None:
        keep &= full.cumsum(dim=-1) - full < top_p
    probs = torch.softmax(sorted_logits.masked_fill(~keep, float("-inf")), dim=-1)
    choice = torch.multinomial(probs, 1, generator=generator)
    return order.gather(-1, choice).squeeze(-1)
