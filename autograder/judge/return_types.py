"""What an exercise returns, as its contract declares it (``contracts/NN_slug.toml``), checked on every call.

A declared type is a small expression: ``float``, ``int``, ``bool``, ``str``, ``bytes``, ``None``, ``tensor``,
``instance`` (an object of the student's class, which stays in their process), ``list[X]``, ``dict[K, V]``,
``tuple[X, Y, ...]`` (exactly those items) and ``X | Y``. ``float`` means a Python float, not a NumPy scalar or a
0-d tensor; ``int`` a Python int, not a bool. The judge checks what came back, by value, in its own process
(``Session``), so no report of the student's process is believed for it.
"""

from __future__ import annotations

ATOMS = ("float", "int", "bool", "str", "bytes", "None", "tensor", "instance")
GENERICS = ("list", "dict", "tuple")
MAX_ITEMS_CHECKED = 64   # of a long list: the first ones (a wrong item type is rarely only in the tail)


class BadDeclaration(ValueError):
    """A declared type the grammar above does not allow (a mistake in a contract file)."""


def parse(text: str):
    """The expression as nested tuples: ``("float",)``, ``("list", item)``, ``("tuple", a, b)``, ``("|", a, b)``."""
    node, rest = _union(text.replace(" ", ""))
    if rest:
        raise BadDeclaration(f"unexpected {rest!r} in the declared type {text!r}")
    return node


def _union(text: str):
    options = []
    while True:
        node, text = _term(text)
        options.append(node)
        if not text.startswith("|"):
            return (options[0] if len(options) == 1 else ("|", *options)), text
        text = text[1:]


def _term(text: str):
    name = ""
    while text and (text[0].isalnum() or text[0] == "_"):
        name, text = name + text[0], text[1:]
    if name in ATOMS:
        return (name,), text
    if name not in GENERICS or not text.startswith("["):
        raise BadDeclaration(f"unknown type {name or text!r} (allowed: {', '.join(ATOMS + GENERICS)})")
    items, text = _items(text[1:])
    if (name == "list" and len(items) != 1) or (name == "dict" and len(items) != 2):
        raise BadDeclaration(f"{name}[...] takes {'one type' if name == 'list' else 'a key and a value type'}")
    return (name, *items), text


def _items(text: str):
    """The comma-separated types up to the closing bracket, and the text after it."""
    items = []
    while True:
        node, text = _union(text)
        items.append(node)
        if text.startswith("]"):
            return items, text[1:]
        if not text.startswith(","):
            raise BadDeclaration(f"expected ',' or ']' at {text!r}")
        text = text[1:]


def mismatch(value, declared) -> str | None:
    """None when ``value`` is of the declared type (a parsed expression), else what differs, in words
    ("a numpy.float64, where a Python float is declared"; "item [1]: a list, where a tensor is declared")."""
    kind = declared[0]
    if kind == "|":
        found = [mismatch(value, option) for option in declared[1:]]
        return None if None in found else found[0]
    if kind in ATOMS:
        return None if _is_atom(value, kind) else f"{_name(value)}, where {_ATOM_WORDS[kind]} is declared"
    return _container_mismatch(value, declared)


def _container_mismatch(value, declared) -> str | None:
    kind = declared[0]
    if kind == "list":
        if type(value) is not list:
            return f"{_name(value)}, where a list is declared"
        return _first_item_mismatch(enumerate(value[:MAX_ITEMS_CHECKED]), declared[1])
    if kind == "tuple":
        if type(value) is not tuple or len(value) != len(declared) - 1:
            return f"{_name(value)}, where a tuple of {len(declared) - 1} is declared"
        return next((f"item [{i}]: {problem}" for i, (item, d) in enumerate(zip(value, declared[1:]))
                     if (problem := mismatch(item, d))), None)
    if type(value) is not dict:
        return f"{_name(value)}, where a dict is declared"
    pairs = list(value.items())[:MAX_ITEMS_CHECKED]
    return (_first_item_mismatch(((f"key {i}", k) for i, (k, _) in enumerate(pairs)), declared[1])
            or _first_item_mismatch(((f"value {i}", v) for i, (_, v) in enumerate(pairs)), declared[2]))


_ATOM_WORDS = {"float": "a Python float", "int": "a Python int", "bool": "a bool", "str": "a str", "bytes": "bytes",
               "None": "None", "tensor": "a tensor", "instance": "an object of your class"}


def _first_item_mismatch(items, declared) -> str | None:
    return next((f"item [{i}]: {problem}" for i, item in items if (problem := mismatch(item, declared))), None)


def _is_atom(value, kind: str) -> bool:
    if kind == "None":
        return value is None
    if kind == "tensor":
        import torch

        return isinstance(value, torch.Tensor)
    if kind == "instance":
        from .handles import Handle

        return isinstance(value, Handle)
    return type(value) is {"float": float, "int": int, "bool": bool, "str": str, "bytes": bytes}[kind]


def _name(value) -> str:
    kind = type(value)
    if value is None:
        return "None"
    if kind.__module__ in ("builtins", None):
        return f"{'an' if kind.__name__[0] in 'aeiou' else 'a'} {kind.__name__}"
    if kind.__module__.startswith("torch") and kind.__name__ == "Tensor":
        return f"a tensor ({'0-d' if value.dim() == 0 else 'shape ' + str(tuple(value.shape))})"
    return f"a {kind.__module__.split('.')[0]}.{kind.__name__}"
