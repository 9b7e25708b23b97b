"""Counts positions from 1 instead of 0."""
import torch


def first_disagreement(printed, exact, decimals=2):
    exact = [float(x) for x in exact]
    if len(printed) != len(exact):
        raise ValueError("lengths differ")
    for i, (shown, value) in enumerate(zip(printed, exact), start=1):
        if abs(shown - value) > 0.5 * 10 ** -decimals + 1e-9:
            return i
    return None
