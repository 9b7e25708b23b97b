"""Compares with exactly half a unit, with no slack for binary floats, so 1.48 for 1.485 is flagged."""
import torch


def first_disagreement(printed, exact, decimals=2):
    exact = [float(x) for x in exact]
    if len(printed) != len(exact):
        raise ValueError("lengths differ")
    for i, (shown, value) in enumerate(zip(printed, exact)):
        if abs(shown - value) > 0.5 * 10 ** -decimals:
            return i
    return None
