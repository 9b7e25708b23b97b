"""Uses torch.topk(logits, top_k) as it is, which raises for k > V instead of keeping everything."""
import torch


def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    scaled = logits / temperature
    if top_k is not None:
        kth = torch.topk(scaled, top_k, dim=-1).values[..., -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
        # keep exactly k on ties: drop the tied ones beyond the first k by id
        rank = torch.sort(scaled, dim=-1, descending=True, stable=True)[1].argsort(-1)
        scaled = scaled.masked_fill(rank >= top_k, float("-inf"))
    sorted_logits, order = torch.sort(scaled, dim=-1, descending=True, stable=True)
    keep = sorted_logits > float("-inf")
    if top_p is not None:
        probs = torch.softmax(sorted_logits, dim=-1)
        keep &= probs.cumsum(dim=-1) - probs < top_p
    probs = torch.softmax(sorted_logits.masked_fill(~keep, float("-inf")), dim=-1)
    choice = torch.multinomial(probs, 1, generator=generator)
    return order.gather(-1, choice).squeeze(-1)
