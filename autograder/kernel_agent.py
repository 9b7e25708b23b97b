"""The student-side half of the judge's protocol: answer requests against a namespace.

This code runs where the student's code runs (the sandboxed runner, or a self-study student's own
kernel), so the judge trusts nothing it says: whatever comes back is only "what the student's code
returned", checked and compared in the judge. It holds the objects that cannot travel by value (a
module the test constructed, an iterator) under numbered references.

Requests (already JSON-decoded):

* ``{"op": "call", "target": T, "args": [...], "kwargs": {...}}``: call a name or a reference;
* ``{"op": "getattr", "target": T, "name": "training"}``;
* ``{"op": "probe", "kind": "gradients", "target": T, "args": [...], "kwargs": {...}, "extra": {...}}``:
  run the kernel-side half of a ``utils.probes`` probe;
* ``{"op": "release", "ids": [3, 4]}``.

``T`` is ``{"name": "cross_entropy"}`` (a name in the namespace) or ``{"ref": 7}``. Replies:
``{"ok": true, "value": <encoded>}`` or ``{"ok": false, "error": {"type", "message", "where"}}``.
"""

from __future__ import annotations

import io
import sys
import traceback

from . import wire

MAX_REFS = 10_000
MAX_ERROR_CHARS = 2_000


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
        return wire.decode(encoded, self.resolve, resolve_global=self._global)

    def _global(self, name: str):
        return self.target({"name": name})

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
                args = self.value(request.get("args", []))
                kwargs = self.value(request.get("kwargs", {"$": "dict", "items": []}))
                result = _quietly(target, args, kwargs)
            elif op == "probe":
                from utils import probes

                kind = request.get("kind")
                if kind not in probes.KERNEL_SIDE:
                    raise ValueError(f"unknown probe {kind!r}")
                args = self.value(request.get("args", []))
                kwargs = self.value(request.get("kwargs", {"$": "dict", "items": []}))
                extra = self.value(request.get("extra", {"$": "dict", "items": []}))
                result = _quietly(probes.KERNEL_SIDE[kind], (target, tuple(args), kwargs), extra)
            else:
                raise ValueError(f"unknown request {op!r}")
            return {"ok": True, "value": wire.encode(result, self.remember)}
        except BaseException as error:  # noqa: BLE001 - every failure of student code is an answer
            return {"ok": False, "error": describe_error(error)}


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
    return {"type": name[:100], "message": message[:MAX_ERROR_CHARS], "where": where}
