"""Undo what a submission did to the checking machinery before each test cell runs.

Student code runs in the same kernel as the tests, so an answer cell can rebind what the tests rely
on: ``torch.allclose = lambda *a, **k: True``, ``math.isclose``, ``numpy.testing``, the course's own
``utils.checks``, a builtin, a ``Tensor`` method, a torch function mode, ``sys.modules`` entries.

At grading time the grader inserts one cell right after the set-up cell (before any student code)
that takes a snapshot of those modules, classes and builtins and keeps it in a closure, bound to a
random name. Each test cell then starts with a call to that name, which puts every snapshotted
binding back (including names like ``torch``, ``np`` or ``checks`` in the notebook's namespace), pops torch function/dispatch modes, and removes trace/profile hooks. A submission
that deletes the name makes its test cells fail (score 0), never pass.

This is a defence against the rebinding attacks above, not a proof of isolation: code that walks the
garbage collector or pokes memory with ``ctypes`` can subvert anything in its own process. The
grader flags such code for review (``autograder.flags``).
"""

from __future__ import annotations

import secrets

WATCHED_MODULES = ("builtins", "math", "random", "numpy", "numpy.testing", "torch", "torch.nn",
                   "torch.nn.functional", "torch.testing", "utils", "utils.checks", "utils.environment",
                   "sys", "os", "warnings", "unittest", "hypothesis")

# Conventional names for those modules in a notebook's namespace. A submission that rebinds one
# (``torch = FakeTorch()``) would change what a visible test computes its expected values with.
MODULE_ALIASES = {"torch": "torch", "np": "numpy", "numpy": "numpy", "F": "torch.nn.functional", "nn": "torch.nn",
                  "math": "math", "random": "random", "checks": "utils.checks", "utils": "utils", "sys": "sys", "os": "os"}


def make_guard(namespace: dict | None = None):
    """Snapshot the watched state now; return a function that restores it.

    ``namespace`` is the notebook's global namespace: names in it that conventionally refer to a
    watched module (``torch``, ``np``, ``F``, ``checks``, ...) are pointed back at the real module
    whenever they exist.
    """
    import importlib
    import sys

    modules = {}
    for name in WATCHED_MODULES:
        try:
            modules[name] = importlib.import_module(name)
        except ImportError:
            continue
    snapshot = {name: dict(vars(module)) for name, module in modules.items()}
    classes = []
    torch = modules.get("torch")
    if torch is not None:
        classes.append(torch.Tensor)
    class_snapshot = [(cls, dict(vars(cls))) for cls in classes]
    setattr_, delattr_, dict_items = setattr, delattr, dict.items
    settrace, setprofile = sys.settrace, sys.setprofile
    module_table = sys.modules
    torch_c = getattr(torch, "_C", None)
    aliases = [(alias, modules[name]) for alias, name in MODULE_ALIASES.items() if name in modules]
    user_namespace = namespace if namespace is not None else {}

    def restore() -> None:
        for alias, module in aliases:
            if alias in user_namespace and user_namespace[alias] is not module:
                user_namespace[alias] = module
        for name, module in dict_items(modules):
            if module_table.get(name) is not module:
                module_table[name] = module
            namespace = vars(module)
            for key, value in dict_items(snapshot[name]):
                if namespace.get(key, restore) is not value:
                    namespace[key] = value
        for cls, attributes in class_snapshot:
            current = vars(cls)
            for key, value in dict_items(attributes):
                if current.get(key, restore) is not value:
                    try:
                        setattr_(cls, key, value)
                    except (AttributeError, TypeError):
                        pass
            for key in [k for k in current if k not in attributes and not k.startswith("__")]:
                try:
                    delattr_(cls, key)
                except (AttributeError, TypeError):
                    pass
        if torch_c is not None:
            while torch_c._len_torch_function_stack() > 0:
                torch_c._pop_torch_function_stack()
            while torch_c._len_torch_dispatch_stack() > 0:
                torch_c._pop_torch_dispatch_stack()
        settrace(None)
        setprofile(None)

    return restore


def guard_name() -> str:
    """A fresh, unguessable name for the restore function in the kernel's namespace."""
    return "_" + secrets.token_hex(12)


def preamble_source(name: str) -> str:
    """The cell the grader inserts after the set-up cell."""
    return (f"import autograder.guard as _course_guard_module\n"
            f"{name} = _course_guard_module.make_guard(globals())\n"
            f"del _course_guard_module\n")


def test_cell_prefix(name: str) -> str:
    """The line the grader puts in front of every test cell."""
    return f"{name}()\n"
