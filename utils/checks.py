"""Checking helpers for the course's tests.

Every helper raises ``AssertionError`` with a message that says what was expected, what came back,
and (when the caller gives one) a hint. Tests in the notebooks use these instead of bare ``assert``
so that a student sees *why* a check failed.

The helpers check the *kind* of a result before its values: a tensor must be exactly a
``torch.Tensor`` (not a subclass that could redefine comparison), with the expected dtype family,
device and shape. The comparison functions are bound when this module is imported, so rebinding
``torch.allclose`` later does not change what these helpers do.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
import torch

# Bound at import time: later monkey-patching of the public names does not reach these.
_Tensor = torch.Tensor
_ndarray = np.ndarray
_isfinite = math.isfinite
_torch_isclose = torch.isclose
_torch_abs = torch.abs
_torch_as_tensor = torch.as_tensor
_float64 = torch.float64
_type = type
_isinstance = isinstance
_repr = repr


class CheckFailure(AssertionError):
    """An ``AssertionError`` raised by a course check (so tests can tell it from other errors)."""


def _fail(name: str, problem: str, hint: str | None) -> None:
    message = f"{name}: {problem}"
    if hint:
        message += f"\nHint: {hint}"
    raise CheckFailure(message)


def _short(value: Any, limit: int = 300) -> str:
    if _type(value) is _Tensor:
        text = _repr(value.detach().cpu())
    else:
        text = _repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kind(value: Any) -> str:
    if _type(value) is _Tensor:
        return f"torch.Tensor(shape={tuple(value.shape)}, dtype={value.dtype}, device={value.device})"
    if _type(value) is _ndarray:
        return f"numpy.ndarray(shape={value.shape}, dtype={value.dtype})"
    return _type(value).__name__


def _dtype_family(dtype: torch.dtype) -> str:
    if dtype == torch.bool:
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
    ``"integer"``, ``"bool"``.
    """
    if _type(actual) is not _Tensor:
        _fail(name, f"expected a torch.Tensor, got {_kind(actual)}.", hint)
    if shape is not None and tuple(actual.shape) != tuple(shape):
        _fail(name, f"expected shape {tuple(shape)}, got shape {tuple(actual.shape)}.", hint)
    if dtype is not None:
        if _isinstance(dtype, str):
            if _dtype_family(actual.dtype) != dtype:
                _fail(name, f"expected a {dtype} dtype, got {actual.dtype}.", hint)
        elif actual.dtype != dtype:
            _fail(name, f"expected dtype {dtype}, got {actual.dtype}.", hint)
    if device is not None and actual.device.type != torch.device(device).type:
        _fail(name, f"expected a tensor on {device}, got one on {actual.device}.", hint)


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

    * a ``torch.Tensor``: ``actual`` must be a tensor of the same shape, a floating dtype if
      ``expected`` is floating, on the same device type; then values are compared.
    * a Python ``float``/``int``: ``actual`` may be a Python number, a NumPy scalar or a 0-d
      tensor; it is converted with ``float()`` and compared.
    * a NumPy array: ``actual`` must be an array of the same shape.

    NaN never matches; infinities match only themselves.
    """
    if _type(expected) is _Tensor:
        assert_tensor(actual, name=name, shape=tuple(expected.shape), device=expected.device.type, hint=hint)
        if expected.dtype.is_floating_point and not actual.dtype.is_floating_point:
            _fail(name, f"expected a floating-point tensor, got dtype {actual.dtype}.", hint)
        a = actual.detach().to("cpu", _float64)
        e = expected.detach().to("cpu", _float64)
        _compare_arrays(a, e, name=name, atol=atol, rtol=rtol, hint=hint)
        return
    if _type(expected) is _ndarray:
        if _type(actual) is not _ndarray:
            _fail(name, f"expected a numpy.ndarray, got {_kind(actual)}.", hint)
        if actual.shape != expected.shape:
            _fail(name, f"expected shape {expected.shape}, got shape {actual.shape}.", hint)
        a = _torch_as_tensor(np.asarray(actual, dtype=np.float64))
        e = _torch_as_tensor(np.asarray(expected, dtype=np.float64))
        _compare_arrays(a, e, name=name, atol=atol, rtol=rtol, hint=hint)
        return
    # A scalar is expected.
    expected_value = float(expected)
    actual_value = _to_float(actual, name=name, hint=hint)
    if math.isnan(actual_value) or not _scalar_close(actual_value, expected_value, atol, rtol):
        _fail(
            name,
            f"expected {expected_value:.6g}, got {actual_value:.6g} "
            f"(difference {abs(actual_value - expected_value):.3g}, tolerance {atol + rtol * abs(expected_value):.3g}).",
            hint,
        )


def _to_float(actual: Any, *, name: str, hint: str | None) -> float:
    """Convert a real scalar result to ``float`` without trusting the object's own methods."""
    if _type(actual) is bool:
        _fail(name, "expected a number, got a bool.", hint)
    if _type(actual) in (float, int):
        return float(actual)
    if _type(actual) is _Tensor:
        if actual.numel() != 1:
            _fail(name, f"expected a single number, got a tensor of shape {tuple(actual.shape)}.", hint)
        return float(actual.detach().to("cpu", _float64).reshape(-1)[0].item())
    if _isinstance(actual, np.generic) and _type(actual).__module__ == "numpy":
        return float(np.float64(actual))
    _fail(name, f"expected a number, got {_kind(actual)}.", hint)
    raise AssertionError  # unreachable; keeps type checkers happy


def _scalar_close(a: float, e: float, atol: float, rtol: float) -> bool:
    if math.isinf(e) or math.isinf(a):
        return a == e
    return abs(a - e) <= atol + rtol * abs(e)


def _compare_arrays(a: torch.Tensor, e: torch.Tensor, *, name: str, atol: float, rtol: float, hint: str | None) -> None:
    close = _torch_isclose(a, e, rtol=rtol, atol=atol, equal_nan=False)
    if bool(close.all()):
        return
    bad = (~close).nonzero()
    first = tuple(int(i) for i in bad[0]) if bad.numel() else ()
    diff = _torch_abs(a - e)
    diff = diff[~torch.isnan(diff)]
    worst = f"{float(diff.max()):.3g}" if diff.numel() else "nan"
    _fail(
        name,
        f"{bad.shape[0]} of {a.numel()} values differ (largest difference {worst}, "
        f"atol={atol:g}, rtol={rtol:g}). First mismatch at index {first}: expected "
        f"{float(e[first]):.6g}, got {float(a[first]):.6g}.\n"
        f"expected: {_short(e)}\ngot:      {_short(a)}",
        hint,
    )


def assert_equal(actual: Any, expected: Any, *, name: str, hint: str | None = None) -> None:
    """Check exact equality for plain data (ints, strings, lists, tuples, dicts, sets).

    The type must match exactly too (a list is not a tuple; ``True`` is not ``1``), and the
    comparison is done on plain copies, so an object with a custom ``__eq__`` cannot pass.
    """
    problem = _plain_difference(actual, expected, path="")
    if problem:
        _fail(name, f"{problem}\nexpected: {_short(expected)}\ngot:      {_short(actual)}", hint)


_PLAIN_SCALARS = (int, float, str, bytes, bool, type(None))


def _plain_difference(actual: Any, expected: Any, path: str) -> str | None:
    where = f" at {path}" if path else ""
    if _type(actual) is not _type(expected):
        return f"expected {_type(expected).__name__}{where}, got {_type(actual).__name__}."
    kind = _type(expected)
    if kind in _PLAIN_SCALARS:
        if not (actual == expected):
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
        if missing or extra:
            return f"keys differ{where}: missing {_short(missing, 120)}, unexpected {_short(extra, 120)}."
        for key in expected:
            problem = _plain_difference(actual[key], expected[key], f"{path}[{key!r}]")
            if problem:
                return problem
        return None
    if kind in (set, frozenset):
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
    try:
        function(*args, **kwargs)
    except expected_error as error:  # noqa: PERF203 - the point is to catch it
        return error
    except Exception as error:  # a different error is a failure with a clear message
        wanted = expected_error.__name__ if _isinstance(expected_error, type) else " or ".join(e.__name__ for e in expected_error)
        _fail(name, f"expected {wanted}, but it raised {_type(error).__name__}: {error}", hint)
    wanted = expected_error.__name__ if _isinstance(expected_error, type) else " or ".join(e.__name__ for e in expected_error)
    _fail(name, f"expected {wanted} to be raised, but the call returned normally.", hint)
    raise AssertionError  # unreachable


def assert_true(condition: Any, *, name: str, problem: str, hint: str | None = None) -> None:
    """Check a plain boolean condition; ``problem`` says what is wrong when it is false."""
    if _type(condition) is _Tensor:
        if condition.numel() != 1 or condition.dtype != torch.bool:
            raise TypeError("assert_true takes a bool or a one-element bool tensor")
        condition = bool(condition.item())
    if _type(condition) is not bool:
        raise TypeError(f"assert_true takes a bool, not {_type(condition).__name__}")
    if not condition:
        _fail(name, problem, hint)
