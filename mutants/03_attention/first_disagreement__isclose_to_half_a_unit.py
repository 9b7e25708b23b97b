"""Tolerates only math.isclose's relative 1e-9 (about 5e-12 here) around half a unit, not the stated 1e-9."""
import math


def first_disagreement(printed, exact, decimals=2):
    exact = [float(x) for x in exact]
    if len(printed) != len(exact):
        raise ValueError("lengths differ")
    half = 0.5 * 10 ** -decimals
    for i, (shown, value) in enumerate(zip(printed, exact)):
        difference = abs(shown - value)
        if difference > half and not math.isclose(difference, half):
            return i
    return None
