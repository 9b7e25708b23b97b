"""What a call did to the process's global state, observed around every call the judge makes (issue 49).

The runner's agent (``kernel_agent.Agent.call``) snapshots these before the student's function runs and compares
after; the judge fails a hidden test's call reported here, with a message from ``judge/changes.py``.
"""

from __future__ import annotations

import contextlib


# --------------------------------------------------------------------------------------------------
# The global random generators, around a call given a generator of its own (issue 49): the course's
# convention is that such a function draws only from the generator it is given, and leaves the caller's
# global random state (PyTorch's, NumPy's, Python's) as it was. The judge fails a call reported here.

def given_a_generator(args, kwargs) -> bool:
    import torch

    return any(isinstance(value, torch.Generator) for value in (*args, *kwargs.values()))


def global_rng_states() -> dict:
    import random

    import numpy
    import torch

    return {"torch": torch.random.get_rng_state(), "numpy": numpy.random.get_state(), "random": random.getstate()}


def global_rngs_changed(before: dict) -> list[str]:
    """The names of the global generators whose state differs from ``before`` (``global_rng_states``)."""
    import numpy
    import torch

    after = global_rng_states()
    changed = []
    if not torch.equal(before["torch"], after["torch"]):
        changed.append("torch")
    old, new = before["numpy"], after["numpy"]
    if old[0] != new[0] or not numpy.array_equal(old[1], new[1]) or tuple(old[2:]) != tuple(new[2:]):
        changed.append("numpy")
    if before["random"] != after["random"]:
        changed.append("random")
    return changed


# --------------------------------------------------------------------------------------------------
# PyTorch's global modes, around every call: no exercise's contract lets a function leave autograd switched
# off (torch.set_grad_enabled(False) where a with torch.no_grad(): block was meant) or the default dtype
# changed; the caller's next computation would silently record no gradients, or make float64 tensors.

def global_modes() -> dict:
    import torch

    return {"autograd": torch.is_grad_enabled(), "default dtype": torch.get_default_dtype()}


def global_modes_changed(before: dict) -> list[str]:
    """``"autograd: on -> off"``-style entries for each global mode that differs from ``before``, each then put
    back as it was: a mode one call left changed would otherwise be the state every later call starts from, so
    that call's mistake would go unseen in the calls the hidden tests make after a visible test's, or be charged
    to the functions called after it."""
    import torch

    after = global_modes()
    torch.set_grad_enabled(before["autograd"])
    torch.set_default_dtype(before["default dtype"])
    words = {True: "on", False: "off"}
    return [f"{name}: {words.get(old, str(old).replace('torch.', ''))} -> {words.get(new, str(new).replace('torch.', ''))}"
            for name, old, new in ((n, before[n], after[n]) for n in before) if old != new]



@contextlib.contextmanager
def autograd_kept():
    """Autograd as it was before the block, whatever the block did to it (a probe's calls, which are not judged
    for modes; the default dtype is left alone there: a test may set it with ``probes.make``)."""
    import torch

    enabled = torch.is_grad_enabled()
    try:
        yield
    finally:
        torch.set_grad_enabled(enabled)
