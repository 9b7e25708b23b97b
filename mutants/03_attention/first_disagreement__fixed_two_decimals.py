"""Always allows 0.005, whatever decimals says."""
import torch


def first_disagreement(printed, exact, decimals=2):
    exact = [float(x) for x in exact]
    if len(printed) != len(exact):
        raise ValueError("lengths differ")
    for i, (shown, value) in enumerate(zip(printed, exact)):
        if abs(shown - value) > 0.005 + 1e-9:
            return i
    return None
