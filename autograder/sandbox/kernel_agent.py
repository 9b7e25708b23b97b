"""The student-side half of the judge's protocol: answer requests against a namespace.

This code runs where the student's code runs (the sandboxed runner, or a self-study student's own
kernel), so the judge trusts nothing it says: whatever comes back is only "what the student's code
returned", checked and compared in the judge. It holds the objects that cannot travel by value (a
module the test constructed, an iterator) under numbered references.

Requests (already JSON-decoded):

* ``{"op": "call", "target": T, "args": [...], "kwargs": {...}, "may_mutate": false}``: call a name or a
  reference. Unless ``may_mutate`` is true, the by-value arguments (tensors, arrays, lists, tuples,
  dicts, nested) are compared afterwards with what arrived, and the reply lists each one that changed
  (``"changed"``: its position or keyword, its parameter name, the path inside it, its value now);
  the judge compares that with what it sent and decides. References and generators are exempt;
* ``{"op": "getattr", "target": T, "name": "training"}``;
* ``{"op": "probe", "kind": "gradients", "target": T, "args": [...], "kwargs": {...}, "extra": {...}}``:
  run the kernel-side half of a ``utils.probes`` probe;
* ``{"op": "release", "ids": [3, 4]}``.

``T`` is ``{"name": "cross_entropy"}`` (a name in the namespace) or ``{"ref": 7}``. Replies:
``{"ok": true, "value": <encoded>}`` or ``{"ok": false, "error": {"type", "message", "where"}}``.
"""

from __future__ import annotations

import io
import itertools
import sys
import traceback

from ..judge import wire, wire_decode
from ..judge.protocol import MAX_ERROR_MESSAGE_CHARS
from .audit import CHECK_EVENT
from .global_state import (autograd_kept, given_a_generator, global_modes, global_modes_changed, global_rng_states,
                           global_rngs_changed)

MAX_REFS = 10_000
_audit = sys.audit   # bound before any student code runs; were this rebound, no check would answer the judge


class Agent:
    def __init__(self, namespace: dict):
        self.namespace = namespace
        self.refs: dict[int, object] = {}
        self.next_id = 1

    # -- references ----------------------------------------------------------------------------
    def remember(self, obj) -> int:
        if len(self.refs) >= MAX_REFS:
            raise RuntimeError("too many live objects held for the judge")
        ident = self.next_id
        self.next_id += 1
        self.refs[ident] = obj
        return ident

    def resolve(self, ident: int):
        if ident not in self.refs:
            raise KeyError(f"no object {ident} (released, or the kernel restarted)")
        return self.refs[ident]

    def target(self, spec):
        if type(spec) is not dict:
            raise TypeError("bad target")
        if "literal" in spec:
            if type(spec["literal"]) is not str:
                raise TypeError("bad target")
            return spec["literal"]
        if "name" in spec:
            name = spec["name"]
            if type(name) is not str:
                raise TypeError("bad target name")
            if name not in self.namespace:
                raise NameError(f"name {name!r} is not defined in your notebook (did the cell that defines it run "
                                "without errors?)")
            return self.namespace[name]
        return self.resolve(spec.get("ref"))

    def value(self, encoded):
        return wire_decode.decode(encoded, self.resolve, resolve_global=self._global, restore_devices=True)

    def _global(self, name: str):
        return self.target({"name": name})

    def call(self, target, request: dict) -> tuple[object, dict]:
        """The call a request asks for, and what was observed around it for the judge to weigh (issue 49):
        ``global_rng`` (a call given a generator touched a global one), ``global_mode`` (autograd or the default
        dtype left changed), ``changed`` (a by-value argument differs from what arrived), ``returned_argument``
        (the result is an argument itself)."""
        sent_args = request.get("args", [])
        sent_kwargs = request.get("kwargs", {"$": "dict", "items": []})
        args = self.value(sent_args)
        kwargs = self.value(sent_kwargs)
        before = global_rng_states() if given_a_generator(args, kwargs) else None
        modes = global_modes()
        result = _quietly(target, args, kwargs)
        nonce = request.get("audit")
        watched = type(nonce) is str
        if watched:   # the machinery the reports are computed with, checked by the audit hook (sandbox/audit.py)
            _audit(CHECK_EVENT, nonce)
        observed = {}
        if before is not None:
            observed["global_rng"] = global_rngs_changed(before)
        observed["global_mode"] = global_modes_changed(modes)
        if request.get("may_mutate") is not True:
            observed["changed"] = changed_arguments(target, sent_args, sent_kwargs, args, kwargs)
            observed["returned_argument"] = returned_arguments(target, result, args, kwargs)
        if watched:   # again after the reports: code they ran (a student's __eq__) may have rebound something
            _audit(CHECK_EVENT, nonce)
        return result, {name: found for name, found in observed.items() if found}

    # -- requests ------------------------------------------------------------------------------
    def handle(self, request: dict) -> dict:
        op = request.get("op")
        try:
            if op == "release":
                for ident in request.get("ids", []):
                    self.refs.pop(ident, None)
                return {"ok": True, "value": None}
            target = self.target(request.get("target"))
            if op == "getattr":
                name = request.get("name")
                if type(name) is not str or name.startswith("__"):
                    raise AttributeError(f"cannot read attribute {name!r}")
                result = getattr(target, name)
            elif op == "call":
                result, observed = self.call(target, request)
                if observed:
                    return {"ok": True, **observed, "value": wire.encode(result, self.remember)}
            elif op == "probe":
                from utils import probes

                kind = request.get("kind")
                if kind not in probes.KERNEL_SIDE:
                    raise ValueError(f"unknown probe {kind!r}")
                args = self.value(request.get("args", []))
                kwargs = self.value(request.get("kwargs", {"$": "dict", "items": []}))
                extra = self.value(request.get("extra", {"$": "dict", "items": []}))
                with autograd_kept():
                    result = _quietly(probes.KERNEL_SIDE[kind], (target, tuple(args), kwargs), extra)
            else:
                raise ValueError(f"unknown request {op!r}")
            return {"ok": True, "value": wire.encode(result, self.remember)}
        except BaseException as error:  # noqa: BLE001 - every failure of student code is an answer
            return {"ok": False, "error": describe_error(error)}


# --------------------------------------------------------------------------------------------------
# A result that is the caller's own object (issue 49): a tensor, array, list or dict passed by value and
# returned as it is (or a tensor viewing exactly the same memory: x.view_as(x), x[:], x.detach()), so a
# caller who edits the result edits their input. No exercise's contract allows it (those that may return a
# view, as split_heads, change the shape); often it is a degenerate branch ("nothing to mask: return ids").

MAX_RETURNED_DEPTH = 4


def returned_arguments(target, result, args, kwargs) -> list[dict]:
    """``{"path": [index, ...] into the result, "name": the argument's parameter name or position}`` for each
    part of ``result`` that is one of the by-value arguments (or a tensor over exactly its memory)."""
    inputs: list[tuple[object, object]] = []
    for position, value in enumerate(args):
        _collect(value, position, inputs, 0)
    for keyword, value in kwargs.items():
        _collect(value, keyword, inputs, 0)
    if not inputs:
        return []
    found: list[dict] = []
    _find_returned(result, [], inputs, found, 0)
    if found:
        names = _parameter_names(target, len(args), kwargs)
        for entry in found:
            entry["name"] = names.get(entry["name"], entry["name"]) if type(entry["name"]) is int else entry["name"]
    return found[:MAX_CHANGES]


def _mutable_value(value) -> bool:
    import numpy
    import torch

    return isinstance(value, (torch.Tensor, numpy.ndarray, list, dict))


def _collect(value, arg, inputs: list, depth: int) -> None:
    if depth > MAX_RETURNED_DEPTH or not _mutable_value(value) and not isinstance(value, tuple):
        return
    if _mutable_value(value):
        inputs.append((value, arg))
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    for item in itertools.islice(items, 64):   # the first 64 only, without copying a long list first
        _collect(item, arg, inputs, depth + 1)


def _same_object(a, b) -> bool:
    import torch

    if a is b:
        return True
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.numel() > 0 and a.device.type != "meta":
        try:
            return (a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()
                    and a.dtype == b.dtype)
        except RuntimeError:
            return False
    return False


def _shares_memory(a, b) -> bool:
    """Two CPU tensors over one storage (a view of part of the other: x[0], x.T, x.view(-1))."""
    import torch

    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.numel() == 0 or b.numel() == 0:
        return False
    try:
        return a.device.type == "cpu" and b.device.type == "cpu" and \
            a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return False


def _find_returned(value, path: list, inputs: list, found: list, depth: int) -> None:
    """Each part of a result that is an input (``{"path", "name"}``), or a tensor over part of an input's memory
    (``"shares": true``: the judge weighs it against the name's contract, which may allow a view)."""
    if depth > MAX_RETURNED_DEPTH or len(found) >= MAX_CHANGES:
        return
    if _mutable_value(value):
        for original, arg in inputs:
            if _same_object(value, original):
                found.append({"path": list(path), "name": arg})
                return
        shared = next((arg for original, arg in inputs if _shares_memory(value, original)), None)
        if shared is not None:
            found.append({"path": list(path), "name": shared, "shares": True})
            return
    items = list(value.items())[:64] if isinstance(value, dict) else \
        list(enumerate(value[:64])) if isinstance(value, (list, tuple)) else []
    for key, item in items:
        _find_returned(item, path + [key if type(key) in (int, str) else "?"], inputs, found, depth + 1)


# --------------------------------------------------------------------------------------------------
# Arguments changed by a call: the facts, for the judge to weigh (``autograder.judge``)

MAX_CHANGES = 20
_EXEMPT_TAGS = ("ref", "global", "generator")


def changed_arguments(target, sent_args, sent_kwargs, args, kwargs) -> list[dict]:
    """Each by-value argument (or part of one) that differs, after the call, from what was sent.

    ``sent_*`` are the arguments as they arrived on the wire; ``args``/``kwargs`` the objects the call
    received. Comparing an argument with its wire form costs one encoding of it (no extra copy is
    kept before the call). References (a model) and generators are exempt: their state changing is
    normal. Each change: ``{"arg": position or keyword, "name": parameter name or None, "path": [index
    of the item or dict entry, ...], "after": the changed part's value now (encoded; None when it
    cannot be sent)}``.
    """
    found: list[dict] = []
    if type(sent_args) is list and len(sent_args) == len(args):
        for position, (sent, live) in enumerate(zip(sent_args, args)):
            _diff(sent, live, [], found, position)
    if type(sent_kwargs) is dict and type(sent_kwargs.get("items")) is list:
        for pair in sent_kwargs["items"]:
            if type(pair) is list and len(pair) == 2 and type(pair[0]) is str and pair[0] in kwargs:
                _diff(pair[1], kwargs[pair[0]], [], found, pair[0])
    if found:
        names = _parameter_names(target, len(args), kwargs)
        for change in found:
            change["name"] = names.get(change["arg"]) if type(change["arg"]) is int else change["arg"]
    return found[:MAX_CHANGES]


def _diff(sent, live, path: list, found: list, arg) -> None:
    """Append to ``found`` each part of ``live`` that differs from its wire form ``sent``: a container
    that kept its shape is compared item by item, anything else as a whole."""
    if len(found) >= MAX_CHANGES:
        return
    tag = sent.get("$") if type(sent) is dict else None
    if tag in _EXEMPT_TAGS:
        return
    parts = _matching_parts(sent, live, tag)
    if parts is _UNREADABLE_KEYS:
        return
    if parts is not None:
        for index, (s, v) in enumerate(parts):
            _diff(s, v, path + [index], found, arg)
        return
    if not _is_container(sent, tag) and _same_encoding(sent, live):
        return
    try:
        after = wire.encode(live)
    except (wire.WireError, RecursionError, TypeError, ValueError, RuntimeError):
        after = None
    found.append({"arg": arg, "path": path, "after": after})


_UNREADABLE_KEYS = object()   # a sent dict whose keys do not decode: nothing to compare it with


def _is_container(sent, tag) -> bool:
    """A list, tuple or dict as sent (one that changed shape is reported whole, without encoding it again)."""
    return type(sent) is list or (tag in ("tuple", "dict") and type(sent.get("items")) is list)


def _matching_parts(sent, live, tag):
    """(sent item, live item) pairs, in order, when ``sent`` is a container and ``live`` still has its
    shape (same type, length and dict keys); else None, or ``_UNREADABLE_KEYS``."""
    if type(sent) is list:
        if type(live) is list and len(live) == len(sent):
            return zip(sent, live)
    elif tag == "tuple" and type(sent.get("items")) is list:
        items = sent["items"]
        if isinstance(live, tuple) and len(live) == len(items):
            return zip(items, live)
    elif tag == "dict" and type(sent.get("items")) is list:
        return _matching_dict_parts(sent["items"], live)
    return None


def _matching_dict_parts(pairs: list, live):
    try:
        keys = [wire_decode.decode(pair[0]) for pair in pairs]
    except (wire.WireError, TypeError, IndexError, RecursionError):
        return _UNREADABLE_KEYS
    if isinstance(live, dict) and list(live.keys()) == keys:
        return ((pair[1], live[key]) for pair, key in zip(pairs, keys))
    return None


def _same_encoding(sent, live) -> bool:
    try:
        return wire.encode(live) == sent
    except (wire.WireError, RecursionError, TypeError, ValueError, RuntimeError):
        return False


def _parameter_names(target, count: int, kwargs: dict) -> dict:
    """Position -> parameter name, from the callable's signature (best effort)."""
    import inspect

    try:
        bound = inspect.signature(target).bind_partial(*range(count), **kwargs)
    except (TypeError, ValueError):
        return {}
    names = {}
    for name, value in bound.arguments.items():
        if type(value) is int and name not in kwargs:
            names[value] = name
        elif type(value) is tuple:  # *args
            for offset, position in enumerate(value):
                if type(position) is int:
                    names[position] = f"{name}[{offset}]"
    return names


def _quietly(function, args, kwargs):
    """Call with the student's prints sent nowhere (a test's output is the judge's to write)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = io.StringIO()
    try:
        return function(*args, **kwargs)
    finally:
        sys.stdout, sys.stderr = saved


def describe_error(error: BaseException) -> dict:
    """The type, message and the innermost frames of an exception, as short plain strings."""
    frames = traceback.extract_tb(error.__traceback__)[-3:]
    where = [f"line {f.lineno} in {f.name}: {(f.line or '').strip()}"[:200] for f in frames
             if "autograder" not in (f.filename or "") and "utils/probes" not in (f.filename or "")]
    name = type(error).__name__
    try:
        message = str(error)
    except Exception:  # noqa: BLE001 - a student exception whose __str__ fails
        message = "<message could not be read>"
    return {"type": name[:100], "message": message[:MAX_ERROR_MESSAGE_CHARS], "where": where}
