"""Checking helpers for the course's tests.

Every helper raises ``AssertionError`` with a message that says what was expected, what came back,
and (when the caller gives one) a hint. Tests in the notebooks use these instead of bare ``assert``
so that a student sees *why* a check failed.

Within ``values_withheld()`` (the judge runs every hidden test so) a message shows no value at all: only
kinds, shapes, dtypes, counts, where the first mismatch is and how large the error is. A hidden test's
inputs must stay hidden, and a result's values can show them (an identity-like function's do).

The helpers check the *kind* of a result before its values: a tensor must be exactly a
``torch.Tensor`` (not a subclass that could redefine comparison), with the expected dtype family,
device and shape. The comparison functions are bound when this module is imported, so rebinding
``torch.allclose`` later does not change what these helpers do.
"""

from __future__ import annotations

import builtins as _builtins
import contextlib
import contextvars
import math
from typing import Any, Callable, Sequence

import numpy as np
import torch

# Everything the checks rely on is bound now, when the set-up cell imports this module and before
# any student code runs, so that rebinding public names later (``torch.allclose``, ``math.isclose``,
# a builtin, a ``Tensor`` method) cannot change a verdict:
# * builtins: this module looks names up in a private copy of the builtins taken at import;
# * tensors: shape, dtype, device and values are read through ``torch._C.TensorBase``, a C type
#   whose attributes cannot be reassigned, with torch function and dispatch modes switched off;
# * values are compared in plain Python, not with a torch function a student could replace.
__builtins__ = dict(vars(_builtins))

_Tensor = torch.Tensor
_TensorBase = torch._C.TensorBase
_tensor_dtype = _TensorBase.__dict__["dtype"].__get__
_tensor_device = _TensorBase.__dict__["device"].__get__
_tensor_size = _TensorBase.size
_tensor_tolist = _TensorBase.tolist
_no_torch_function = torch._C.DisableTorchFunction
_no_torch_dispatch = getattr(torch._C, "_DisableTorchDispatch", None)
_tensor_vars = torch.Tensor.__dict__["__dict__"].__get__
_torch_device = torch.device
# A tensor that crossed from the student's process to the judge is decoded on the CPU, and the device
# it lived on there is kept in this attribute (``autograder.judge.wire.DEVICE_ATTRIBUTE``), so that a device
# check gives the same verdict in the judge as in the student's kernel.
_WIRE_DEVICE = "_wire_device"
_ndarray = np.ndarray
_ndarray_shape = np.ndarray.__dict__["shape"].__get__
_ndarray_tolist = np.ndarray.tolist
_numpy_generic = np.generic
_isnan = math.isnan
_isinf = math.isinf
_torch_bool = torch.bool


# Whether failure messages may show values (see ``values_withheld``). A context variable: this module
# refuses assignments, and the judge's hidden tests are the only ones that set it.
_VALUES_SHOWN = contextvars.ContextVar("course_check_values_shown", default=True)


@contextlib.contextmanager
def values_withheld():
    """Within the block, failure messages show no values: kinds, shapes, dtypes, counts, where the first
    mismatch is and how large the error is (two significant digits), never a value compared. The judge
    runs hidden tests so: their inputs stay hidden, and a result can show its input."""
    token = _VALUES_SHOWN.set(False)
    try:
        yield
    finally:
        _VALUES_SHOWN.reset(token)


def values_shown() -> bool:
    """False within ``values_withheld()``."""
    return _VALUES_SHOWN.get()


class CheckFailure(AssertionError):
    """An ``AssertionError`` raised by a course check (so tests can tell it from other errors)."""

    def _render_traceback_(self):
        """How Jupyter (IPython) shows a failed check: the message first, then the test cell's line.

        The frames of this module are the checking machinery, not the student's business: each of
        its functions sets ``__tracebackhide__`` and they are left out. (IPython's own traceback
        honours that marker too, but always shows the innermost frame, which is always in here.)
        """
        __tracebackhide__ = True
        lines = [f"{type(self).__name__}: {self}"]
        try:
            from types import TracebackType

            from IPython import get_ipython

            kept, entry = [], self.__traceback__
            while entry is not None:
                if not entry.tb_frame.f_locals.get("__tracebackhide__"):
                    kept.append(entry)
                entry = entry.tb_next
            visible = None
            for entry in reversed(kept):
                visible = TracebackType(visible, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
            shell = get_ipython()
            if shell is not None and visible is not None:
                where = shell.InteractiveTB.structured_traceback(type(self), self, visible, tb_offset=0)
                lines += [""] + list(where[:-1])  # its last item repeats the message
        except Exception:  # noqa: BLE001 - showing the message alone is always possible
            pass
        return lines


def _fail(name: str, problem: str, hint: str | None) -> None:
    __tracebackhide__ = True
    message = f"{name}: {problem}"
    if hint:
        message += f"\nHint: {hint}"
    raise CheckFailure(message)


def _tensor_values(tensor) -> list:
    """The tensor's values as a flat Python list, read without any replaceable torch machinery."""
    __tracebackhide__ = True
    with _no_torch_function():
        if _no_torch_dispatch is not None:
            with _no_torch_dispatch():
                nested = _tensor_tolist(tensor)
        else:
            nested = _tensor_tolist(tensor)
    return _flatten(nested)


def _flatten(nested) -> list:
    __tracebackhide__ = True
    if type(nested) is not list:
        return [nested]
    flat, stack = [], [nested]
    while stack:
        item = stack.pop()
        if type(item) is list:
            stack.extend(reversed(item))
        else:
            flat.append(item)
    return flat


def _shape(value) -> tuple:
    __tracebackhide__ = True
    if type(value) is _Tensor:
        return tuple(_tensor_size(value))
    return tuple(_ndarray_shape(value))


def _short_list(values: list, shape: tuple, limit: int = 12, start: int = 0) -> str:
    """Up to ``limit`` values from flat position ``start`` on (the first mismatch), saying where they start."""
    __tracebackhide__ = True
    shown = ", ".join(f"{v:.6g}" if type(v) is float else repr(v) for v in values[start:start + limit])
    before = "..., " if start else ""
    more = ", ..." if len(values) > start + limit else ""
    where = f"from index {_unravel(start, shape)}, " if start else ""
    return f"[{before}{shown}{more}] ({where}{len(values)} values, shape {shape})"


def _unravel(flat: int, shape: tuple) -> tuple:
    """The index in an array of ``shape`` of the value at position ``flat`` of its flattened values."""
    __tracebackhide__ = True
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return tuple(reversed(index))


def _short(value: Any, limit: int = 300) -> str:
    __tracebackhide__ = True
    if type(value) is _Tensor:
        return _short_list(_tensor_values(value), _shape(value))
    if type(value) in (int, float, str, bytes, bool, list, tuple, dict, set, frozenset, type(None)):
        text = repr(value)
    elif issubclass(type(value), _numpy_generic) and type(value).__module__ == "numpy":
        text = f"numpy.{type(value).__name__}({value.item()!r})"
    else:
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kind(value: Any) -> str:
    __tracebackhide__ = True
    if type(value) is _Tensor:
        return f"torch.Tensor(shape={_shape(value)}, dtype={_tensor_dtype(value)}, device={_device(value)})"
    if type(value) is _ndarray:
        return f"numpy.ndarray(shape={_shape(value)})"
    if type(value).__name__ == "Handle" and type(value).__module__ == "autograder.judge.handles":
        # At grading time an object the grader cannot send by value stays in the student's process (a bytearray,
        # a set of their own class...): say so, not the grader's name for it.
        return "an object of another type (one the grader cannot read by value, such as a bytearray or your own class)"
    return type(value).__name__


def _device(tensor) -> torch.device:
    """Where the tensor lives, or lived before it crossed to the judge (see ``_WIRE_DEVICE``)."""
    __tracebackhide__ = True
    actual = _tensor_device(tensor)
    if actual.type == "cpu":
        recorded = _tensor_vars(tensor).get(_WIRE_DEVICE)
        if type(recorded) is str:
            return _torch_device(recorded)
    return actual


def _dtype_family(dtype: torch.dtype) -> str:
    __tracebackhide__ = True
    if dtype == _torch_bool:
        return "bool"
    if dtype.is_floating_point:
        return "floating"
    if dtype.is_complex:
        return "complex"
    return "integer"


def assert_tensor(
    actual: Any,
    *,
    name: str,
    shape: Sequence[int] | None = None,
    dtype: torch.dtype | str | None = None,
    device: torch.device | str | None = None,
    hint: str | None = None,
) -> None:
    """Check that ``actual`` is exactly a ``torch.Tensor`` with the given shape, dtype and device.

    ``dtype`` may be a concrete dtype (``torch.float32``) or a family: ``"floating"``,
    ``"integer"``, ``"bool"``. A subclass of ``torch.Tensor`` is refused: it could redefine how it
    compares.
    """
    __tracebackhide__ = True
    if type(actual) is not _Tensor:
        _fail(name, f"expected a torch.Tensor, got {_kind(actual)}.", hint)
    if shape is not None and _shape(actual) != tuple(shape):
        _fail(name, f"expected shape {tuple(shape)}, got shape {_shape(actual)}.", hint)
    actual_dtype = _tensor_dtype(actual)
    if dtype is not None:
        if isinstance(dtype, str):
            if _dtype_family(actual_dtype) != dtype:
                _fail(name, f"expected a {dtype} dtype, got {actual_dtype}.", hint)
        elif actual_dtype != dtype:
            _fail(name, f"expected dtype {dtype}, got {actual_dtype}.", hint)
    if device is not None:
        wanted = device if isinstance(device, str) else device.type
        if _device(actual).type != wanted.split(":")[0]:
            _fail(name, f"expected a tensor on {wanted}, got one on {_device(actual)}.", hint)


def assert_close(
    actual: Any,
    expected: Any,
    *,
    name: str,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    hint: str | None = None,
) -> None:
    """Check that ``actual`` matches ``expected`` within ``atol + rtol * |expected|``.

    ``expected`` decides the kind of result required:

    * a ``torch.Tensor``: ``actual`` must be exactly a tensor of the same shape, on the same kind
      of device, with a floating dtype if ``expected`` has one; then values are compared.
    * a Python ``float``/``int``: ``actual`` may be a Python number, a NumPy scalar or a
      one-element tensor.
    * a NumPy array: ``actual`` must be an array of the same shape.

    NaN never matches; an infinity matches only the same infinity.
    """
    __tracebackhide__ = True
    if type(expected) is _Tensor:
        assert_tensor(actual, name=name, shape=_shape(expected), device=_device(expected).type, hint=hint)
        if _tensor_dtype(expected).is_floating_point and not _tensor_dtype(actual).is_floating_point:
            _fail(name, f"expected a floating-point tensor, got dtype {_tensor_dtype(actual)}.", hint)
        _compare_values(_tensor_values(actual), _tensor_values(expected), _shape(expected),
                        name=name, atol=atol, rtol=rtol, hint=hint)
        return
    if type(expected) is _ndarray:
        if type(actual) is not _ndarray:
            _fail(name, f"expected a numpy.ndarray, got {_kind(actual)}.", hint)
        if _shape(actual) != _shape(expected):
            _fail(name, f"expected shape {_shape(expected)}, got shape {_shape(actual)}.", hint)
        _compare_values(_flatten(_ndarray_tolist(actual)), _flatten(_ndarray_tolist(expected)), _shape(expected),
                        name=name, atol=atol, rtol=rtol, hint=hint)
        return
    expected_value = float(expected)
    actual_value = _to_float(actual, name=name, hint=hint)
    if not _scalar_close(actual_value, expected_value, atol, rtol):
        if not values_shown():
            _fail(name, f"the number differs from the expected one ({_error_size(actual_value, expected_value)}, "
                        f"tolerance {atol + rtol * abs(expected_value):.2g}).", hint)
        shown_actual, shown_expected = _pair(actual_value, expected_value)
        _fail(
            name,
            f"expected {shown_expected}, got {shown_actual} "
            f"(difference {abs(actual_value - expected_value):.3g}, tolerance {atol + rtol * abs(expected_value):.3g}).",
            hint,
        )


def _to_float(actual: Any, *, name: str, hint: str | None) -> float:
    """Convert a real scalar result to ``float`` without calling any method of the object."""
    __tracebackhide__ = True
    kind = type(actual)
    if kind is bool:
        _fail(name, "expected a number, got a bool.", hint)
    if kind is float or kind is int:
        return float(actual)
    if kind is _Tensor:
        values = _tensor_values(actual)
        if len(values) != 1:
            _fail(name, f"expected a single number, got a tensor of shape {_shape(actual)}.", hint)
        if type(values[0]) not in (float, int):
            _fail(name, f"expected a number, got a tensor of dtype {_tensor_dtype(actual)}.", hint)
        return float(values[0])
    if issubclass(kind, _numpy_generic) and kind.__module__ == "numpy":
        value = actual.item()
        if type(value) in (float, int) and type(value) is not bool:
            return float(value)
    _fail(name, f"expected a number, got {_kind(actual)}.", hint)
    raise AssertionError  # unreachable


def _scalar_close(a: float, e: float, atol: float, rtol: float) -> bool:
    __tracebackhide__ = True
    if _isnan(a) or _isnan(e):
        return False
    if _isinf(e) or _isinf(a):
        return a == e
    return abs(a - e) <= atol + rtol * abs(e)


def _pair(actual: float, expected: float) -> tuple[str, str]:
    """Format two numbers with the fewest significant digits (6 at least, 17 at most) that tell them apart."""
    for digits in range(6, 18):
        a, e = f"{actual:.{digits}g}", f"{expected:.{digits}g}"
        if a != e:
            return a, e
    return f"{actual!r}", f"{expected!r}"


def _compare_values(actual: list, expected: list, shape: tuple, *, name: str, atol: float, rtol: float,
                    hint: str | None) -> None:
    __tracebackhide__ = True
    bad = [i for i, (a, e) in enumerate(zip(actual, expected)) if not _scalar_close(float(a), float(e), atol, rtol)]
    if not bad:
        return
    finite = [abs(float(actual[i]) - float(expected[i])) for i in bad
              if not (_isnan(float(actual[i])) or _isinf(float(actual[i])) or _isinf(float(expected[i])))]
    worst = f"{max(finite):.{3 if values_shown() else 2}g}" if finite else "not finite"
    first = bad[0]
    got, want = float(actual[first]), float(expected[first])
    if not values_shown():
        _fail(name, f"{len(bad)} of {len(expected)} values differ (largest difference {worst}, atol={atol:g}, "
                    f"rtol={rtol:g}). First mismatch at index {_unravel(first, shape)}.", hint)
    _fail(
        name,
        f"{len(bad)} of {len(expected)} values differ (largest difference {worst}, atol={atol:g}, rtol={rtol:g}). "
        f"First mismatch at index {_unravel(first, shape)}: expected {_pair(got, want)[1]}, "
        f"got {_pair(got, want)[0]}.\n"
        f"expected: {_short_list(expected, shape, start=first)}\ngot:      {_short_list(actual, shape, start=first)}",
        hint,
    )


def _error_size(got: float, want: float) -> str:
    """How far ``got`` is from ``want``, in two significant digits, without either value."""
    __tracebackhide__ = True
    if _isnan(got) or _isnan(want) or _isinf(got) or _isinf(want):
        return "a NaN or an infinity where the other is not" if got != want else "equal"
    return f"difference {abs(got - want):.2g}"


def _how_far(actual: Any, expected: Any) -> str:
    """How two plain scalars of one type differ, without their values: a number's difference, where a
    text first differs and the lengths."""
    __tracebackhide__ = True
    if type(expected) in (int, float):
        return f" ({_error_size(float(actual), float(expected))})"
    if type(expected) in (str, bytes):
        first = next((i for i, (a, e) in enumerate(zip(actual, expected)) if a != e), min(len(actual), len(expected)))
        return f" (from position {first} on; length {len(actual)}, expected {len(expected)})"
    return ""


def assert_equal(actual: Any, expected: Any, *, name: str, hint: str | None = None) -> None:
    """Check exact equality for plain data (ints, strings, lists, tuples, dicts, sets).

    The type must match exactly too (a list is not a tuple; ``True`` is not ``1``), and the
    comparison is done on plain copies, so an object with a custom ``__eq__`` cannot pass.
    """
    __tracebackhide__ = True
    problem = _plain_difference(actual, expected, path="")
    if problem and not values_shown():
        _fail(name, problem, hint)
    if problem:
        start = _first_differing_item(actual, expected)
        _fail(name, f"{problem}\nexpected: {_short_from(expected, start)}\ngot:      {_short_from(actual, start)}", hint)


def _first_differing_item(actual: Any, expected: Any) -> int:
    """The position of the first item at which two lists or tuples differ (0 for anything else)."""
    __tracebackhide__ = True
    if type(actual) is not type(expected) or type(expected) not in (list, tuple):
        return 0
    for index, (a, e) in enumerate(zip(actual, expected)):
        if _plain_difference(a, e, path="") is not None:
            return index
    return min(len(actual), len(expected))


def _short_from(value: Any, start: int, limit: int = 300) -> str:
    """``_short(value)``, or for a list or tuple its items from position ``start`` on (the first mismatch)."""
    __tracebackhide__ = True
    if not start:
        return _short(value, limit)
    text = _short(type(value)(value[start:]), limit)
    rest = text[1:-1].rstrip(",")
    return f"{text[0]}...{', ' + rest if rest else ''}{text[-1]} (from index {start} of {len(value)} items)"


_PLAIN_SCALARS = (int, float, str, bytes, bool, type(None))


def _plain_difference(actual: Any, expected: Any, path: str) -> str | None:
    __tracebackhide__ = True
    where = f" at {path}" if path else ""
    if type(actual) is not type(expected):
        return f"expected {type(expected).__name__}{where}, got {_kind(actual)}."
    kind = type(expected)
    if kind in _PLAIN_SCALARS:
        if not (actual == expected):
            if not values_shown():
                return f"the {kind.__name__}{where} differs from the expected one{_how_far(actual, expected)}."
            return f"expected {_short(expected, 80)}{where}, got {_short(actual, 80)}."
        return None
    if kind in (list, tuple):
        if len(actual) != len(expected):
            return f"expected {len(expected)} items{where}, got {len(actual)}."
        for index, (a, e) in enumerate(zip(actual, expected)):
            problem = _plain_difference(a, e, f"{path}[{index}]")
            if problem:
                return problem
        return None
    if kind is dict:
        missing = [k for k in expected if k not in actual]
        extra = [k for k in actual if k not in expected]
        if (missing or extra) and not values_shown():
            return f"keys differ{where}: {len(missing)} missing, {len(extra)} unexpected."
        if missing or extra:
            return f"keys differ{where}: missing {_short(missing, 120)}, unexpected {_short(extra, 120)}."
        for position, key in enumerate(expected):
            step = f"[{key!r}]" if values_shown() else f"[key {position + 1} of {len(expected)}]"
            problem = _plain_difference(actual[key], expected[key], path + step)
            if problem:
                return problem
        return None
    if kind in (set, frozenset):
        if set(actual) != set(expected) and not values_shown():
            return (f"sets differ{where}: {len(set(expected) - set(actual))} missing, "
                    f"{len(set(actual) - set(expected))} unexpected.")
        if set(actual) != set(expected):
            return f"sets differ{where}: missing {_short(sorted(set(expected) - set(actual), key=repr), 120)}, unexpected {_short(sorted(set(actual) - set(expected), key=repr), 120)}."
        return None
    raise TypeError(f"assert_equal compares plain data only, not {kind.__name__}")


def assert_raises(
    expected_error: type[BaseException] | tuple[type[BaseException], ...],
    function: Callable[..., Any],
    *args: Any,
    name: str,
    hint: str | None = None,
    **kwargs: Any,
) -> BaseException:
    """Check that ``function(*args, **kwargs)`` raises ``expected_error``; return the exception."""
    __tracebackhide__ = True
    try:
        function(*args, **kwargs)
    except expected_error as error:  # noqa: PERF203 - the point is to catch it
        return error
    except Exception as error:  # a different error is a failure with a clear message
        wanted = expected_error.__name__ if isinstance(expected_error, type) else " or ".join(e.__name__ for e in expected_error)
        said = f": {error}" if values_shown() else ""
        _fail(name, f"expected {wanted}, but it raised {type(error).__name__}{said}", hint)
    wanted = expected_error.__name__ if isinstance(expected_error, type) else " or ".join(e.__name__ for e in expected_error)
    _fail(name, f"expected {wanted} to be raised, but the call returned normally.", hint)
    raise AssertionError  # unreachable


def assert_error_boundary(
    expected_error: type[BaseException],
    call: Callable[[Any], Any],
    *,
    raises: Sequence[Any],
    allowed: Sequence[Any],
    name: str,
    hint: str | None = None,
) -> None:
    """Check a declared error condition on both sides of its boundary: ``call(value)`` raises ``expected_error``
    for every value of ``raises`` (the boundary itself where it is excluded, and one past it, so that a check
    written as ``== 0`` for "< 1" shows) and returns normally for every value of ``allowed`` (just inside, so that
    ``<= 1`` for "< 1" shows). ``call`` takes the one value that varies, e.g.
    ``lambda n: bits_per_byte(1.0, n, "abc")``; the values, single numbers, are shown in the messages."""
    __tracebackhide__ = True
    for value in raises:
        assert_raises(expected_error, call, value, name=f"{name} = {value!r} (outside the allowed range)", hint=hint)
    for value in allowed:
        try:
            call(value)
        except Exception as error:  # noqa: BLE001 - any exception on the allowed side is the failure reported
            said = f": {error}" if values_shown() else ""
            _fail(f"{name} = {value!r} (just inside the allowed range)",
                  f"expected no error, but it raised {type(error).__name__}{said}", hint)


def assert_true(condition: Any, *, name: str, problem: str, hint: str | None = None) -> None:
    """Check a plain boolean condition; ``problem`` says what is wrong when it is false."""
    __tracebackhide__ = True
    if type(condition) is _Tensor:
        values = _tensor_values(condition)
        if len(values) != 1 or _tensor_dtype(condition) != _torch_bool:
            raise TypeError("assert_true takes a bool or a one-element bool tensor")
        condition = values[0]
    if type(condition) is not bool:
        raise TypeError(f"assert_true takes a bool, not {type(condition).__name__}")
    if not condition:
        _fail(name, problem, hint)


def assert_kept_on_meta(report: Any, *, name: str, hint: str | None = None, values_may_be_read: bool = True) -> None:
    """Check a report of ``utils.meta_device`` (``result_device_on_meta`` or ``module_output_device_on_meta``):
    the call kept to PyTorch's meta device, which stands in for a GPU (its result is on meta), or it could not
    run there because it reads its inputs' values (``"needs values"``, which is not judged). A result on the CPU,
    a device mismatch or no tensor fails, with the report as the problem. ``values_may_be_read=False`` is for a
    call that no correct answer needs values for (a rearrangement): "needs values" fails too, since copying meta
    tensors into one made on the CPU reads as that."""
    __tracebackhide__ = True
    if type(report) is not dict:
        raise TypeError(f"assert_kept_on_meta takes the dict a utils.meta_device probe returns, not {type(report).__name__}")
    outcome = report.get("outcome")
    if not ((outcome == "needs values" and values_may_be_read) or (outcome == "device" and report.get("device") == "meta")):
        seen = _short(report) if values_shown() else _plain_words(report.get("outcome"), report.get("device"))
        _fail(name, f"with its tensors on the meta device, the call gave {seen}.", hint)


def assert_kept_on_fake_cuda(report: Any, *, name: str, hint: str | None = None) -> None:
    """Check a report of ``utils.fake_cuda.result_device_on_fake_cuda``: with its tensors labelled ``cuda:0``
    (their values kept, so code that reads values is judged too), the call's result is on that device. A result on
    the CPU, a device mismatch (as a GPU would raise), another exception or no tensor fails, with the report as the
    problem; ``"unsupported"`` (the code reached CUDA itself, which a CPU build cannot emulate) is not judged."""
    __tracebackhide__ = True
    if type(report) is not dict:
        raise TypeError(f"assert_kept_on_fake_cuda takes the dict utils.fake_cuda returns, not {type(report).__name__}")
    outcome = report.get("outcome")
    if not (outcome == "unsupported" or (outcome == "device" and report.get("device") == "cuda")):
        seen = _short(report) if values_shown() else _plain_words(report.get("outcome"), report.get("device"))
        _fail(name, f"with its tensors on a GPU (emulated: cuda:0 with the values kept), the call gave {seen}.", hint)


def _plain_words(*words: Any) -> str:
    """Words of a report the student's process made, shown only where they are plain short words."""
    __tracebackhide__ = True
    shown = [w for w in words if type(w) is str and len(w) <= 20 and w.replace(" ", "").isalpha()]
    return "the outcome " + " on ".join(repr(w) for w in shown) if shown else "an outcome the grader does not show"


class _ReadOnlyModule(type(_builtins)):
    """This module refuses assignments: ``checks.assert_close = ...`` in an answer raises at once."""

    def __setattr__(self, name, value):
        if name.startswith("__"):  # import machinery (reload sets __spec__, __loader__, ...)
            return super().__setattr__(name, value)
        raise AttributeError(f"utils.checks is read-only; {name!r} cannot be reassigned")

    def __delattr__(self, name):
        raise AttributeError(f"utils.checks is read-only; {name!r} cannot be deleted")


import sys as _sys  # noqa: E402

_sys.modules[__name__].__class__ = _ReadOnlyModule
