"""Divides the caller's logits by the temperature in place (logits /= temperature)."""
import torch


def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    logits /= temperature
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True, stable=True)
    keep = torch.ones_like(sorted_logits, dtype=torch.bool)
    if top_k is not None:
        keep[..., top_k:] = False
    if top_p is not None:
        probs = torch.softmax(sorted_logits.masked_fill(~keep, float("-inf")), dim=-1)
        keep &= probs.cumsum(dim=-1) - probs < top_p
    probs = torch.softmax(sorted_logits.masked_fill(~keep, float("-inf")), dim=-1)
    choice = torch.multinomial(probs, 1, generator=generator)
    return order.gather(-1, choice).squeeze(-1)
