"""Each exercise's contract as data: ``contracts/NN_slug.toml``, declared once, beside its docstring.

A docstring states an exercise's whole contract in words; the clauses every exercise shares are also declared
here, per name a solution cell defines, so that one mechanism checks them on every graded call instead of each
hidden cell rewriting the check::

    [bits_per_byte]
    returns = "float"                      # judge/return_types.py: checked on every call of a hidden test
    errors = [
      { raises = "ValueError", when = "n_tokens < 1", argument = "n_tokens", outside = [0, -1], inside = [1] },
      { raises = "ValueError", when = "text is empty" },
    ]

* ``returns``: the type of what a call gives back (``return_types``), checked by the judge on every call.
* ``errors``: each error condition, ``when`` in the docstring's words. One with a numeric boundary names its
  ``argument`` and values just ``outside`` (raise) and just ``inside`` (allowed): the exercise's hidden cells must
  probe it on both sides with ``checks.assert_error_boundary`` (``tests/course/test_contracts.py``).
* ``generator``: the argument that is the call's only randomness (the judge compares the global generators of
  torch, NumPy and ``random`` before and after every call given one: ``sandbox/global_state.py``).
* ``mutates``: the by-value arguments the call may change (none by default: every other is checked unchanged
  after every call); a test calls such an exercise through ``probes.mutating_call``.
* ``views``: arguments the result may be a view of (``split_heads``); a result is never an argument itself.
* ``not_raised``: exception types the docstring names without the exercise raising them (PyTorch's own).
* ``device``: what the results' device follows (``"ids"``, ``"x"``, ``"the model"``), where the docstring states it:
  the exercise's hidden cells must then check it on an emulated GPU (``utils.fake_cuda``), or on the meta device
  with ``values_may_be_read=False`` for an answer that never needs the values.

``tests/course/test_contracts.py`` proves the declarations and the docstrings agree, and the suite's judge runs
of every solution prove the declared return types true.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from dataclasses import dataclass, field

from ..judge import return_types

KEYS = {"returns", "errors", "generator", "mutates", "views", "not_raised", "device"}
ERROR_KEYS = {"raises", "when", "argument", "outside", "inside"}


@dataclass(frozen=True)
class ErrorClause:
    raises: str                  # the exception type's name, e.g. "ValueError"
    when: str                    # the condition, in the docstring's words
    argument: str | None = None  # the argument with a numeric boundary, if any
    outside: tuple = ()          # values of it just past the boundary: the call raises
    inside: tuple = ()           # values just inside: the call does not raise


@dataclass(frozen=True)
class Contract:
    name: str
    returns: str
    errors: tuple[ErrorClause, ...] = ()
    generator: str | None = None
    mutates: tuple[str, ...] = ()
    views: tuple[str, ...] = ()
    not_raised: tuple[str, ...] = field(default=())
    device: str | None = None


def path_of(assignment) -> Path:
    """``contracts/NN_slug.toml`` of the course the assignment belongs to (``solutions/NN_slug/slug.ipynb``)."""
    return Path(assignment.source_path).resolve().parents[2] / "contracts" / f"{assignment.name}.toml"


def load(assignment) -> dict[str, Contract]:
    """The contracts of one assignment, by name; {} when it declares none. Raises ValueError for a malformed file."""
    path = path_of(assignment)
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {name: _contract(name, entry, path) for name, entry in data.items()}


def for_judge(assignment) -> dict[str, dict]:
    """What the judge checks on every call (``Session.declare_contracts``): name -> ``{"returns": the declared
    type, "views": the arguments the result may share memory with}``."""
    return {name: {"returns": c.returns, "views": list(c.views)} for name, c in load(assignment).items()}


def _contract(name: str, entry, path) -> Contract:
    where = f"{path.name} [{name}]"
    if type(entry) is not dict or not set(entry) <= KEYS or "returns" not in entry:
        raise ValueError(f"{where}: a table with 'returns' and only {sorted(KEYS)}")
    try:
        return_types.parse(entry["returns"])
    except return_types.BadDeclaration as error:
        raise ValueError(f"{where}: {error}") from None
    errors = tuple(_error(e, where) for e in entry.get("errors", []))
    names = {key: tuple(entry.get(key, ())) for key in ("mutates", "views", "not_raised")}
    if any(type(v) is not str for values in names.values() for v in values):
        raise ValueError(f"{where}: mutates, views and not_raised are lists of names")
    if entry.get("device") is not None and type(entry["device"]) is not str:
        raise ValueError(f"{where}: device names what the results' device follows, as a string")
    return Contract(name, entry["returns"], errors, entry.get("generator"), **names, device=entry.get("device"))


def _error(entry, where: str) -> ErrorClause:
    if type(entry) is not dict or not set(entry) <= ERROR_KEYS or not {"raises", "when"} <= set(entry):
        raise ValueError(f"{where}: each error needs 'raises' and 'when' and has only {sorted(ERROR_KEYS)}")
    bounded = "argument" in entry
    if bounded != ("outside" in entry and "inside" in entry):
        raise ValueError(f"{where}: an error with a boundary names its argument, values outside and values inside")
    return ErrorClause(entry["raises"], entry["when"], entry.get("argument"), tuple(entry.get("outside", ())),
                       tuple(entry.get("inside", ())))
