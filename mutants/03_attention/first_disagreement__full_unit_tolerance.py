"""Allows a whole unit of the last digit instead of half a unit, so 1.48 passes for 1.474."""
import torch


def first_disagreement(printed, exact, decimals=2):
    exact = [float(x) for x in exact]
    if len(printed) != len(exact):
        raise ValueError("lengths differ")
    for i, (shown, value) in enumerate(zip(printed, exact)):
        if abs(shown - value) > 10 ** -decimals:
            return i
    return None
