"""Returns -1 instead of None when every entry agrees."""
import torch


def first_disagreement(printed, exact, decimals=2):
    exact = [float(x) for x in exact]
    if len(printed) != len(exact):
        raise ValueError("lengths differ")
    for i, (shown, value) in enumerate(zip(printed, exact)):
        if abs(shown - value) > 0.5 * 10 ** -decimals + 1e-9:
            return i
    return -1
