"""Top-k by threshold (logit >= k-th largest value), which keeps every token tied with the k-th."""
import torch


def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
    if temperature <= 0:
        raise ValueError("temperature must be > 0")
    scaled = logits / temperature
    if top_k is not None:
        kth = torch.topk(scaled, min(top_k, scaled.shape[-1]), dim=-1).values[..., -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    sorted_logits, order = torch.sort(scaled, dim=-1, descending=True, stable=True)
    keep = torch.isfinite(sorted_logits)
    if top_p is not None:
        probs = torch.softmax(sorted_logits, dim=-1)
        keep &= probs.cumsum(dim=-1) - probs < top_p
    probs = torch.softmax(sorted_logits.masked_fill(~keep, float("-inf")), dim=-1)
    choice = torch.multinomial(probs, 1, generator=generator)
    return order.gather(-1, choice).squeeze(-1)
