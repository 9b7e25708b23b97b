"""Returns the last disagreeing position instead of the first."""
import torch


def first_disagreement(printed, exact, decimals=2):
    exact = [float(x) for x in exact]
    if len(printed) != len(exact):
        raise ValueError("lengths differ")
    found = None
    for i, (shown, value) in enumerate(zip(printed, exact)):
        if abs(shown - value) > 0.5 * 10 ** -decimals + 1e-9:
            found = i
    return found
