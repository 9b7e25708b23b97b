"""Zips the two lists without checking their lengths, so a missing number goes unnoticed."""
import torch


def first_disagreement(printed, exact, decimals=2):
    exact = [float(x) for x in exact]
    for i, (shown, value) in enumerate(zip(printed, exact)):
        if abs(shown - value) > 0.5 * 10 ** -decimals + 1e-9:
            return i
    return None
