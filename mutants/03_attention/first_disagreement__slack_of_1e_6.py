"""Allows a slack of 1e-6 instead of the stated 1e-9, so a difference of half a unit plus 1e-8 passes as agreeing."""


def first_disagreement(printed, exact, decimals=2):
    exact = [float(x) for x in exact]
    if len(printed) != len(exact):
        raise ValueError("lengths differ")
    for i, (shown, value) in enumerate(zip(printed, exact)):
        if abs(shown - value) > 0.5 * 10 ** -decimals + 1e-6:
            return i
    return None
