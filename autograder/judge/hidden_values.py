"""Hidden tests show no input values: what the judge holds back from a hidden test's message, and from
every output that follows it.

The rule: feedback shows a hidden test as its name, points, verdict and message, and the message says
what was checked in words, never the values of the test's inputs. A red team found the first values of a
hidden test's seeded input in a student's feedback page (the check's preview of a result that was its
input). The judge (``session.Session``) keeps the rule in three layers:

* by construction, the checks run with ``utils.checks.values_withheld()`` in a hidden test: kinds,
  shapes, dtypes, counts, the first mismatch's position and the error's size, never a value; and the
  report of an argument changed in place says what changed, not what it held (``changes``);
* what the student's code raised in a hidden test is shown as its type and the line that raised it,
  never its message (``withheld``): code can put its arguments there (``raise ValueError(str(x))``);
  what it printed during a call is dropped by the runner, as for every test;
* as a net, ``HiddenInputs`` records every value a hidden test sends to the student's code and replaces
  by ``…`` what shows them in the hidden test's message (a test's own words, such as a check named after
  its input, an error of the test's code) and in every output after it (a value the student's code kept
  and printed in a later cell): a string input, quoted (or unquoted from ``LONG_TEXT`` characters on),
  and a run of consecutive numbers of one input as Python, NumPy or PyTorch print them, at the precision
  printed: in the hidden test's message ``RUN`` numbers, or all of a 2-number input; in a later output,
  which is the student's own, ``RUN`` numbers with ``RUN_DIGITS`` digits among them (``[1, 0, 2]`` is as
  likely the student's own result as three ids of a small vocabulary the test sent). A single number (a
  size, a hyperparameter such as ``alpha``) and numbers after ``index``, ``at``, ``shape`` or ``size``
  (positions and sizes) are left alone: they say what was checked.
"""

from __future__ import annotations

import re

import numpy as np

MAX_VALUES = 1_000_000          # numbers recorded in all (8 MB; past that, none)
MAX_CANDIDATES = 10_000         # places in the inputs where one printed number starts a run, at most
RUN = 3                         # consecutive numbers of an input that count as showing it ...
RUN_DIGITS = 6                  # ... with at least this many digits among them, outside the hidden test
LONG_TEXT = 10                  # a string input this long is hidden unquoted too
HIDDEN = "…"
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])")
_GAP = re.compile(r"[\s,\[\]()]*")          # what may stand between two printed numbers of one run
_PLACE = re.compile(r"\b(?:index|indices|at|shape|size|sizes|position|positions)\s*[(\[]?\s*$", re.IGNORECASE)
_WHERE = re.compile(r"line (\d{1,7}) in ([\w<>.]{1,80})")


def withheld(label: str, name: str, where) -> str:
    """What a hidden test shows of an exception the student's code raised: its type (if a plain name) and
    the line that raised it, never its message."""
    kind = name if re.fullmatch(r"[A-Za-z_][\w.]{0,80}", name or "") else "an exception"
    line = next((m for m in (_WHERE.match(str(w)) for w in reversed(where or [])) if m), None)
    at = f" (line {line.group(1)} in {line.group(2)})" if line else ""
    return (f"{label} raised {kind}{at}; a hidden test does not show its message, which can hold the "
            "test's inputs.")


class HiddenInputs:
    """The values hidden tests sent to the student's code; ``redact`` hides them in a text."""

    def __init__(self):
        self._sequences: list[np.ndarray] = []
        self._texts: set[str] = set()
        self._kept = 0
        self._index = None

    def __bool__(self) -> bool:
        return bool(self._sequences or self._texts)

    def add_arguments(self, arguments) -> None:
        """Record a call's arguments (a list, or a dict of keyword arguments), each on its own: no run of
        numbers counts across two of them."""
        for value in arguments.values() if isinstance(arguments, dict) else arguments:
            self.add(value)

    def add(self, value, depth: int = 0) -> None:
        """Record ``value`` (a test's argument: tensors, arrays, lists, dicts, strings, numbers)."""
        import torch

        if depth > 20:
            return
        if isinstance(value, torch.Tensor):
            self._tensor(value)
        elif isinstance(value, np.ndarray) and value.dtype.kind in "iuf":
            self._numbers(value.reshape(-1)[:MAX_VALUES].astype(np.float64))
        elif isinstance(value, str):
            self.add_text(value)
            self._numbers(np.frombuffer(value.encode("utf-8", "replace"), dtype=np.uint8).astype(np.float64))
        elif isinstance(value, (list, tuple)):
            self._numbers(np.array(_plain_numbers(value, depth), dtype=np.float64))
            for item in value:
                if not _is_number(item):
                    self.add(item, depth + 1)
        elif isinstance(value, dict):
            self.add(list(value.keys()), depth + 1)
            self.add(list(value.values()), depth + 1)

    def add_text(self, text: str) -> None:
        """Record a text to hide (a string input, a message the student's code raised)."""
        if isinstance(text, str) and len(text.strip()) >= 2:
            self._texts.add(text)

    def _tensor(self, tensor) -> None:
        import torch

        try:
            if tensor.device.type == "meta" or tensor.is_sparse or tensor.dtype in (torch.bool,) or tensor.is_complex():
                return
            self._numbers(tensor.detach().reshape(-1)[:MAX_VALUES].to("cpu", torch.float64).numpy())
        except (RuntimeError, TypeError, ValueError):
            return

    def _numbers(self, values: np.ndarray) -> None:
        values = values[:MAX_VALUES - self._kept]
        if len(values) >= 2:
            self._sequences.append(values)
            self._kept += len(values)
            self._index = None

    def redact(self, text: str, strict: bool = False) -> str:
        """``text`` with every string input and every run of an input's numbers replaced by ``…``;
        ``strict``: a hidden test's own message (shorter runs count)."""
        if not self or not text:
            return text
        for hidden in sorted(self._texts, key=len, reverse=True):
            text = text.replace(repr(hidden), repr(HIDDEN))
            if len(hidden.strip()) >= LONG_TEXT:
                text = text.replace(hidden, HIDDEN)
        return self._redact_numbers(text, strict) if self._sequences else text

    def redact_outputs(self, outputs: list, strict: bool = False) -> list:
        """Notebook outputs (stream, error, text data) with ``redact`` applied to their text."""
        for output in outputs:
            if not isinstance(output, dict):
                continue
            for key in ("text", "evalue"):
                if isinstance(output.get(key), str):
                    output[key] = self.redact(output[key], strict)
            if isinstance(output.get("traceback"), list):
                output["traceback"] = [self.redact(line, strict) if isinstance(line, str) else line
                                       for line in output["traceback"]]
            data = output.get("data")
            if isinstance(data, dict) and isinstance(data.get("text/plain"), str):
                data["text/plain"] = self.redact(data["text/plain"], strict)
        return outputs

    # -- numbers -------------------------------------------------------------------------------
    def _built(self):
        """All recorded numbers in one array, NaN between inputs (no run crosses one), sorted for lookups;
        and the length of the input each number is in."""
        if self._index is None:
            flat = np.concatenate([part for values in self._sequences for part in (values, np.array([np.nan]))])
            lengths = np.concatenate([part for values in self._sequences for part in
                                      (np.full(len(values), len(values), dtype=np.int32), np.zeros(1, dtype=np.int32))])
            order = np.argsort(flat, kind="stable")
            self._index = (flat, order, flat[order], lengths)
        return self._index

    def _redact_numbers(self, text: str, strict: bool) -> str:
        tokens = [(m.start(), m.end(), *_value_and_tolerance(m.group()), sum(c.isdigit() for c in m.group()))
                  for m in _NUMBER.finditer(text)]
        hidden = set()
        for chain in _chains(text, tokens, 2 if strict else RUN):
            hidden.update(self._runs(chain, strict))
        if not hidden:
            return text
        pieces, last = [], 0
        for start, end, *_ in sorted(tokens[i] for i in hidden):
            pieces += [text[last:start], HIDDEN]
            last = end
        return "".join(pieces) + text[last:]

    def _runs(self, chain: list, strict: bool) -> set:
        """The tokens of ``chain`` (indices into the text's numbers, with their values) that show a run."""
        flat, order, ordered, lengths = self._built()
        least_digits = 0 if strict else RUN_DIGITS
        hidden = set()
        for i in range(len(chain) - 1):
            _, value, tolerance, digits = chain[i]
            low = np.searchsorted(ordered, value - tolerance, side="left")
            high = np.searchsorted(ordered, value + tolerance, side="right")
            places = order[low:min(high, low + MAX_CANDIDATES)]
            length = 1
            while len(places) and i + length < len(chain):
                _, next_value, next_tolerance, next_digits = chain[i + length]
                after = places + length
                after = after[after < len(flat)]
                places = after[np.abs(flat[after] - next_value) <= next_tolerance] - length
                if len(places):
                    length += 1
                    digits += next_digits
                    whole = strict and bool((lengths[places] == length).any())   # all of a 2-number input
                    if (length >= RUN and digits >= least_digits) or whole:
                        hidden.update(chain[j][0] for j in range(i, i + length))
        return hidden


def _is_number(item) -> bool:
    return type(item) in (int, float)


def _plain_numbers(value, depth: int) -> list:
    """The numbers of a (nested) list or tuple of plain numbers, in order."""
    found = []
    for item in value:
        if _is_number(item):
            found.append(float(item))
        elif isinstance(item, (list, tuple)) and depth < 20:
            found += _plain_numbers(item, depth + 1)
    return found[:MAX_VALUES]


def _value_and_tolerance(token: str) -> tuple[float, float]:
    """A printed number and half a unit of its last printed digit (0 for an integer: printed exactly)."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    scale = 10.0 ** (int(exponent) if exponent else 0)
    half = 0.5 * 10.0 ** -decimals * scale if decimals else 0.0
    value = float(token)
    return value, half * (1 + 1e-6) + 1e-12 * abs(value)


def _chains(text: str, tokens: list, shortest: int) -> list:
    """Runs of printed numbers that stand one after another, only separators between them (a printed
    tensor, array or list), and not after a word that makes them a position or a size: each a list of
    (token index, value, tolerance, digits)."""
    chains, current = [], []
    for index, (start, end, value, tolerance, digits) in enumerate(tokens):
        if current and not _GAP.fullmatch(text[tokens[index - 1][1]:start]):
            chains.append(current)
            current = []
        if not current and _PLACE.search(text[max(0, start - 20):start]):
            current = [None]          # a position or a size: this chain is left alone
        current.append((index, value, tolerance, digits))
    chains.append(current)
    return [chain for chain in chains if len(chain) >= shortest and chain[0] is not None]
