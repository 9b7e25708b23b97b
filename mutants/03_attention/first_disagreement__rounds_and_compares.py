"""Rounds the exact value and compares it with the printed one, so a half-way value disagrees with one of its two correct roundings."""
import torch


def first_disagreement(printed, exact, decimals=2):
    exact = [float(x) for x in exact]
    if len(printed) != len(exact):
        raise ValueError("lengths differ")
    for i, (shown, value) in enumerate(zip(printed, exact)):
        if round(value, decimals) != shown:
            return i
    return None
