"""Converts the printed numbers to the exact tensor's dtype, so a float32 tensor rounds 0.12 to 0.1199999973."""
import torch


def first_disagreement(printed, exact, decimals=2):
    if len(printed) != len(exact):
        raise ValueError("lengths differ")
    if isinstance(exact, torch.Tensor):
        shown, value = torch.tensor(printed, dtype=exact.dtype), exact
    else:
        shown, value = torch.tensor(printed, dtype=torch.float64), torch.tensor(exact, dtype=torch.float64)
    bad = ((shown - value).abs() > 0.5 * 10 ** -decimals + 1e-9).nonzero()
    return int(bad[0, 0]) if len(bad) else None
