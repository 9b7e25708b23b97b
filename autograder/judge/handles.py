"""Handles: the exercise names as a test cell sees them in the judge.

A ``Handle`` stands for a function, class or object that lives in the student's process. Calling it
sends the arguments there by value (``autograder.judge.wire``) and brings the result back; reading an
attribute does the same. ``Probes`` is what ``utils.probes`` calls in the judge for the checks that
must look inside the student's process (gradients, in-place calls, a test's own time limit). An
exception the student's code raised comes back as the same built-in type, or ``StudentCodeError``.
"""

from __future__ import annotations

import builtins
import contextlib
from typing import Protocol

from . import wire
from .hidden_values import withheld
from .protocol import MAX_ERROR_MESSAGE_CHARS


class Asks(Protocol):
    """What a handle needs of the judge's session (``session.Session``): a request answered by the
    student's process, the values it sends there, and the time limit of the call being made."""

    call_limit: tuple[float, str] | None

    def ask(self, message: dict, label: str, sent: tuple | None = None, name: str | None = None): ...

    def send(self, value): ...


class StudentCodeError(RuntimeError):
    """An exception raised by the student's code whose type is not a Python built-in."""


class Handle(wire.Ref):
    """A function, class or object that lives in the student's process. Call it; read attributes."""

    __slots__ = ("_session", "_label")

    def __init__(self, session: Asks, ident, label: str):
        object.__setattr__(self, "id", ident)
        object.__setattr__(self, "_session", session)
        object.__setattr__(self, "_label", label)

    def __call__(self, *args, **kwargs):
        return self._call(args, kwargs, may_mutate=False)

    def _call(self, args: tuple, kwargs: dict, *, may_mutate: bool):
        """Call where the object lives. Unless ``may_mutate``, a by-value argument the call changed
        (the runner reports what it saw; ``changed_inputs`` here decides) fails the test, and so does a result
        that breaks the contract declared for the notebook name called (``Session.declare_contracts``)."""
        return self._session.ask({"op": "call", "target": self._target(), "args": self._session.send(list(args)),
                                  "kwargs": self._session.send(dict(kwargs)), "may_mutate": bool(may_mutate)},
                                 self._label, sent=None if may_mutate else (tuple(args), dict(kwargs)),
                                 name=self.id if isinstance(self.id, str) else None)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._session.ask({"op": "getattr", "target": self._target(), "name": name}, f"{self._label}.{name}")

    def __setattr__(self, name, value):
        raise AttributeError("attributes of the student's objects cannot be set from a test; call a method")

    def _target(self) -> dict:
        return {"name": self.id} if isinstance(self.id, str) else {"ref": self.id}

    def __repr__(self) -> str:
        return f"<{self._label}>"


class Probes:
    """What ``utils.probes`` calls in the judge (``probes._judge``)."""

    def __init__(self, session: Asks):
        self.session = session

    def probe(self, kind: str, target, args, kwargs, **extra):
        session = self.session
        if kind == "make":
            spec = {"literal": target}
        elif isinstance(target, Handle):
            spec = target._target()
        else:
            raise TypeError(f"probes.{kind} needs one of the notebook's functions, classes or objects, "
                            f"got {type(target).__name__}")
        return session.ask({"op": "probe", "kind": kind, "target": spec, "args": session.send(list(args)),
                            "kwargs": session.send(dict(kwargs)), "extra": session.send(dict(extra))},
                           f"probes.{kind}")

    def mutating_call(self, target, args, kwargs):
        if not isinstance(target, Handle):
            raise TypeError(f"probes.mutating_call needs one of the notebook's functions, classes or objects, "
                            f"got {type(target).__name__}")
        return target._call(tuple(args), dict(kwargs), may_mutate=True)

    @contextlib.contextmanager
    def time_limit(self, seconds: float, what: str):
        previous = self.session.call_limit
        self.session.call_limit = (float(seconds), what)
        try:
            yield
        finally:
            self.session.call_limit = previous


def exception_from(error: dict, label: str) -> BaseException:
    """Rebuild a student exception for the test: the same built-in type, or ``StudentCodeError``. Its
    ``withheld`` attribute is what a hidden test shows of it (``hidden_values.withheld``: no message)."""
    if type(error) is not dict:
        return StudentCodeError(f"{label} failed")
    name = str(error.get("type", "Error"))[:100]
    message = str(error.get("message", ""))[:MAX_ERROR_MESSAGE_CHARS]
    where = [str(w)[:200] for w in error.get("where", [])[:3]] if type(error.get("where")) is list else []
    text = message + (f"\n(raised in your code: {where[-1]})" if where else "")
    kind = getattr(builtins, name, None)
    rebuilt = None
    if isinstance(kind, type) and issubclass(kind, Exception) and kind.__module__ == "builtins":
        try:
            rebuilt = kind(text)
        except Exception:  # noqa: BLE001 - a built-in whose constructor wants other arguments
            pass
    rebuilt = rebuilt if rebuilt is not None else StudentCodeError(f"{name}: {text}")
    rebuilt.withheld = withheld(label, name, where)
    return rebuilt


