"""Inputs changed by a call: the runner reports what it saw, the judge compares with what it sent.

A student's function must leave its arguments as they were (unless the exercise says it mutates).
The runner compares each by-value argument after the call with what arrived and lists the parts that
differ (``kernel_agent.changed_arguments``); nothing in that list is believed here: each entry only
points at a part of an argument, and only a real difference from the judge's own copy counts.

In a hidden test (``utils.checks.values_withheld()``) the message names no value the argument held: a
dict's key is named by its position, a changed number or string is only said to have changed, added or
removed keys are counted.
"""

from __future__ import annotations

from . import wire, wire_decode

MAX_CHANGES_READ = 20
_UNREADABLE = object()


def changed_inputs(label: str, args: tuple, kwargs: dict, changed) -> str | None:
    """The failure message for a call that modified a by-value argument, or None when it did not.

    ``args``/``kwargs`` are the values the test passed (the judge's own objects); ``changed`` is the
    runner's report (``kernel_agent.changed_arguments``). Nothing in the report is believed: each
    entry names a part of an argument and what it holds now, and only a real difference from what
    the test sent counts.
    """
    if type(changed) is not list:
        return None
    problems = []
    for entry in changed[:MAX_CHANGES_READ]:
        try:
            found = _one_change(args, kwargs, entry)
        except (wire.WireError, RecursionError, TypeError, ValueError, KeyError, IndexError, RuntimeError):
            continue
        if found:
            problems.append(found)
    if not problems:
        return None
    (name, what, kind), more = problems[0], len(problems) - 1
    who = label[5:] if label.startswith("your ") else label
    text = f"{who} modified its argument `{name}` in place ({what}); {_advice(name, kind)}."
    if more:
        text += f" ({more} more part{'s' if more > 1 else ''} of its arguments changed too.)"
    return text + "\nHint: the caller's inputs must be left as they were (the exercise's docstring says so)."


def _advice(name: str, kind: str) -> str:
    root = name.split("[")[0] if name.split("[")[0].isidentifier() else "x"
    if kind == "tensor":
        return (f"return a new tensor instead (work on a copy such as {root}.clone(), or write "
                f"{root} = {root} * 2 rather than {root} *= 2)")
    if kind == "array":
        return f"return a new array instead (work on a copy, {root}.copy())"
    return f"build and return a new {kind} instead of changing the caller's"


def _one_change(args: tuple, kwargs: dict, entry) -> tuple[str, str, str] | None:
    """(where, what changed, kind of value) for one entry of the runner's report, or None if the part
    it points at is in fact unchanged (or the entry points nowhere)."""
    if type(entry) is not dict or type(entry.get("path")) is not list or len(entry["path"]) > wire.MAX_DEPTH:
        return None
    found = _argument(args, kwargs, entry.get("arg"))
    if found is None:
        return None
    node, name = found[0], _display_name(entry.get("name"), entry.get("arg"))
    for step in entry["path"]:
        if type(step) is not int:
            return None
        node, part = _step_into(node, step)
        if part is None:
            return None
        name += part
    after = wire_decode.decode(entry["after"]) if entry.get("after") is not None else _UNREADABLE
    what = _what_changed(node, after)
    return None if what is None else (name, what, _kind(node))


def _argument(args: tuple, kwargs: dict, arg) -> tuple | None:
    if type(arg) is int and 0 <= arg < len(args):
        return (args[arg],)
    if type(arg) is str and arg in kwargs:
        return (kwargs[arg],)
    return None


def _display_name(name, arg) -> str:
    """The parameter name the runner reported if it is a plain identifier, else the position."""
    plain = type(name) is str and 0 < len(name) <= 60 and name.isascii() and \
        name.replace("_", "a").replace("[", "").replace("]", "").isalnum()
    if plain:
        return name
    return arg if type(arg) is str else f"#{arg + 1}"


def _step_into(node, step: int):
    """(the part at ``step``, its subscript text) of a dict or sequence; (node, None) for anything else."""
    if isinstance(node, dict):
        key = list(node.keys())[step]
        return node[key], f"[{_short(key)}]" if _values_shown() else f"[key {step + 1} of {len(node)}]"
    if isinstance(node, (list, tuple)):
        return node[step], f"[{step}]"
    return node, None


def _kind(node) -> str:
    import numpy as np
    import torch

    if isinstance(node, torch.Tensor):
        return "tensor"
    if isinstance(node, np.ndarray):
        return "array"
    return "dict" if isinstance(node, dict) else "list"


def _what_changed(before, after) -> str | None:
    """How ``after`` differs from ``before`` in words, or None if it does not."""
    import numpy as np
    import torch

    if after is _UNREADABLE:
        return "it now holds something the grader cannot read"
    if isinstance(before, (torch.Tensor, np.ndarray)):
        return _array_changed(before, after)
    if isinstance(before, dict):
        return _dict_changed(before, after)
    if isinstance(before, (list, tuple)):
        return _sequence_changed(before, after)
    if isinstance(before, (torch.Generator, wire.Ref)):
        return None
    try:
        same = wire.encode(before) == wire.encode(after)
    except Exception:  # noqa: BLE001 - values that cannot be compared count as changed
        same = False
    if same:
        return None
    return f"{_short(before)} became {_short(after)}" if _values_shown() else "its value changed"


def _array_changed(before, after) -> str | None:
    import numpy as np
    import torch

    kind = torch.Tensor if isinstance(before, torch.Tensor) else np.ndarray
    if not isinstance(after, kind):
        return f"it was replaced by a {type(after).__name__}"
    if tuple(before.shape) != tuple(after.shape):
        return f"its shape changed from {tuple(before.shape)} to {tuple(after.shape)}"
    if before.dtype != after.dtype:
        return f"its dtype changed from {before.dtype} to {after.dtype}"
    if kind is torch.Tensor:
        b, a = before.detach(), after.detach()
        count, total = int(((b != a) & ~(_nan(b) & _nan(a))).sum()), b.numel()
    else:
        count, total = int(np.sum((before != after) & ~(_nan(before) & _nan(after)))), before.size
    if count:
        return f"{count} of {total} value{'s' if total != 1 else ''} changed"
    if kind is torch.Tensor and before.requires_grad != after.requires_grad:
        return f"its requires_grad changed from {before.requires_grad} to {after.requires_grad}"
    return None


def _dict_changed(before: dict, after) -> str | None:
    if not isinstance(after, dict):
        return f"it was replaced by a {type(after).__name__}"
    added = [k for k in after if k not in before]
    removed = [k for k in before if k not in after]
    if added or removed:
        parts = ([f"{len(added)} key{'s' if len(added) != 1 else ''} added ({_keys(added)})"] if added else []) + \
                ([f"{len(removed)} removed ({_keys(removed)})"] if removed else [])
        return ", ".join(parts)
    count = sum(_what_changed(before[k], after[k]) is not None for k in before)
    return f"{count} of {len(before)} entries changed" if count else None


def _sequence_changed(before, after) -> str | None:
    if not isinstance(after, (list, tuple)):
        return f"it was replaced by a {type(after).__name__}"
    if len(before) != len(after):
        return f"its length changed from {len(before)} to {len(after)}"
    count = sum(_what_changed(b, a) is not None for b, a in zip(before, after))
    return f"{count} of {len(before)} items changed" if count else None


def _nan(values):
    import numpy as np
    import torch

    if isinstance(values, torch.Tensor):
        return torch.isnan(values) if (values.is_floating_point() or values.is_complex()) else torch.zeros_like(values, dtype=torch.bool)
    return np.isnan(values) if values.dtype.kind in "fc" else np.zeros(values.shape, dtype=bool)


def _values_shown() -> bool:
    from utils.checks import values_shown

    return values_shown()


def _keys(keys: list) -> str:
    if not _values_shown():
        return "not shown in a hidden test"
    return ", ".join(_short(k) for k in keys[:3]) + (", ..." if len(keys) > 3 else "")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


GLOBAL_RNG_EXAMPLES = {"torch": "torch.rand, torch.randint or torch.multinomial without generator=",
                       "numpy": "numpy.random", "random": "Python's random module"}


def global_rng_used(label: str, names) -> str:
    """The failure message for a call, given a generator of its own, that drew from (or reseeded) a global
    random generator (``global_state.global_rngs_changed``): ``names`` from the runner's report."""
    known = [n for n in (names if type(names) is list else []) if n in GLOBAL_RNG_EXAMPLES][:3] or ["torch"]
    who = label[5:] if label.startswith("your ") else label
    which = " and ".join(f"{n}'s ({GLOBAL_RNG_EXAMPLES[n]})" for n in known)
    return (f"{who} changed the global random state: it drew from {which} global generator, or seeded it. "
            "It is given a generator: every random draw must come from that one (pass generator=...), and the "
            "caller's global random state must be left as it was.\nHint: the same seed must give the same "
            "result whatever else the program draws, and your function must not change what it draws next.")


def global_mode_left_changed(label: str, entries) -> str:
    """The failure message for a call that left a global PyTorch mode changed (``global_state.global_modes_changed``):
    ``entries`` from the runner's report, e.g. ``["autograd: on -> off"]``."""
    known = [e for e in (entries if type(entries) is list else []) if type(e) is str and len(e) < 80][:2] or ["a mode"]
    who = label[5:] if label.startswith("your ") else label
    return (f"{who} left PyTorch's global state changed ({'; '.join(known)}): the caller's next computation runs "
            "with it.\nHint: turn gradients off with a `with torch.no_grad():` block (or @torch.no_grad()), which "
            "restores autograd when it ends, not torch.set_grad_enabled(False); never call torch.set_default_dtype "
            "in a function: give tensors their dtype with dtype=.")


def argument_returned(label: str, entries) -> str:
    """The failure message for a call that returned one of its by-value arguments itself, or a tensor sharing
    memory with one where its contract promises a new one (``kernel_agent.returned_arguments``)."""
    first = entries[0] if type(entries) is list and entries and type(entries[0]) is dict else {}
    name = first.get("name")
    name = name if type(name) is str and name.isidentifier() else f"argument {name}" if type(name) is int else "an argument"
    steps = _result_path(first.get("path"))
    where = "its result" if not steps else f"part {steps} of its result"
    who = label[5:] if label.startswith("your ") else label
    what = (f"a view of the caller's `{name}` as {where} (a tensor over part of its memory: x[0], x.T, x.view(...))"
            if first.get("shares") is True else
            f"the caller's own `{name}` as {where} (the same object, or a view of all of its memory)")
    return (f"{who} returned {what}, not a new one: a caller who changes the result changes their `{name}` too.\n"
            "Hint: return "
            "a new tensor or list (x.clone(), list(x), or a computation that makes one), also on the branch where "
            "nothing needs to change.")


def _result_path(path) -> str:
    """``[1]['k']``: the place in a result, its indices and short dict keys (anything else is left out)."""
    steps = path if type(path) is list else []
    return "".join(f"[{i}]" if type(i) is int else f"[{i!r}]" for i in steps
                   if type(i) is int or (type(i) is str and i.isidentifier() and len(i) <= 20))


def wrong_return_type(label: str, problem: str) -> str:
    """The failure message for a call whose value is not of the type its contract declares
    (``return_types.mismatch`` says how, e.g. "a numpy.float64, where a Python float is declared")."""
    who = label[5:] if label.startswith("your ") else label
    return (f"{who} returned {problem} (the docstring's Returns).\nHint: convert at the end: float(x) or x.item() "
            "for a Python number, a tensor built with torch operations, a list or tuple of the items the docstring "
            "names, also on the branches that return early.")
