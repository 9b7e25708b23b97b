"""utils.checks: right answers pass, wrong ones fail with a message that says what and why."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from utils import checks


def test_close_tensors_pass_and_mismatch_is_explained():
    checks.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]), name="f")
    with pytest.raises(AssertionError) as info:
        checks.assert_close(torch.tensor([1.0, 2.5]), torch.tensor([1.0, 2.0]), name="f(x)", hint="look at the axis")
    message = str(info.value)
    assert "f(x)" in message and "expected 2" in message and "got 2.5" in message and "Hint: look at the axis" in message


def test_shape_dtype_and_kind_are_checked_before_values():
    with pytest.raises(AssertionError, match="expected shape"):
        checks.assert_close(torch.zeros(2, 3), torch.zeros(3, 2), name="x")
    with pytest.raises(AssertionError, match="floating"):
        checks.assert_close(torch.tensor([1, 2]), torch.tensor([1.0, 2.0]), name="x")
    with pytest.raises(AssertionError, match="expected a torch.Tensor"):
        checks.assert_close([1.0, 2.0], torch.tensor([1.0, 2.0]), name="x")


def test_pretending_objects_are_rejected():
    class Liar(torch.Tensor):
        def __eq__(self, other):
            return True

    class Anything:
        def __eq__(self, other):
            return True

        def __float__(self):
            return 1.0

    with pytest.raises(AssertionError, match="expected a torch.Tensor"):
        checks.assert_close(torch.zeros(2).as_subclass(Liar), torch.ones(2), name="x")
    with pytest.raises(AssertionError, match="expected a number"):
        checks.assert_close(Anything(), 1.0, name="x")
    with pytest.raises(AssertionError, match="expected list"):
        checks.assert_equal(Anything(), [1, 2], name="x")


def test_patched_torch_allclose_does_not_change_the_verdict(monkeypatch):
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(torch, "isclose", lambda a, b, **k: torch.ones_like(a, dtype=torch.bool))
    monkeypatch.setattr(math, "isclose", lambda *a, **k: True)
    with pytest.raises(AssertionError):
        checks.assert_close(torch.tensor([0.0]), torch.tensor([1.0]), name="x")
    with pytest.raises(AssertionError):
        checks.assert_close(0.0, 1.0, name="x")


def test_scalars_accept_python_numpy_and_0d_tensors():
    for value in (2.0, np.float32(2.0), torch.tensor(2.0), torch.tensor([2.0])):
        checks.assert_close(value, 2.0, name="x")
    with pytest.raises(AssertionError):
        checks.assert_close(float("nan"), 2.0, name="x")
    checks.assert_close(float("inf"), float("inf"), name="x")


def test_equal_is_exact_about_types():
    checks.assert_equal([("a", 1)], [("a", 1)], name="merges")
    with pytest.raises(AssertionError, match="expected tuple"):
        checks.assert_equal([["a", 1]], [("a", 1)], name="merges")
    with pytest.raises(AssertionError, match="expected int"):
        checks.assert_equal(True, 1, name="n")


def test_raises_reports_the_wrong_error_and_no_error():
    def fine():
        return 1

    def wrong():
        raise TypeError("nope")

    checks.assert_raises(ValueError, lambda: (_ for _ in ()).throw(ValueError("x")), name="f")
    with pytest.raises(AssertionError, match="returned normally"):
        checks.assert_raises(ValueError, fine, name="f")
    with pytest.raises(AssertionError, match="raised TypeError"):
        checks.assert_raises(ValueError, wrong, name="f")


def test_the_module_refuses_reassignment():
    with pytest.raises(AttributeError, match="read-only"):
        checks.assert_close = lambda *a, **k: None
    with pytest.raises(AttributeError, match="read-only"):
        del checks.assert_equal


def test_values_that_differ_below_six_digits_are_printed_with_enough_digits_to_differ():
    # sin(1) in float32 against float64: equal to 6 significant digits, different at the 8th.
    import re

    exact = math.sin(1.0)
    rounded = float(torch.tensor(exact, dtype=torch.float32))
    with pytest.raises(AssertionError) as error:
        checks.assert_close(rounded, exact, atol=0, rtol=1e-12, name="sin(1)")
    message = str(error.value)
    shown = re.search(r"expected (\S+), got (\S+) ", message)
    assert shown and shown.group(1) != shown.group(2), message
    assert (shown.group(1), shown.group(2)) == ("0.84147098", "0.84147096"), message
    with pytest.raises(AssertionError) as error:
        checks.assert_close(torch.tensor([0.5, rounded], dtype=torch.float64),
                            torch.tensor([0.5, exact], dtype=torch.float64), atol=0, rtol=1e-12, name="sin(1)")
    shown = re.search(r"expected (\S+), got (\S+)\.", str(error.value))
    assert shown and shown.group(1) != shown.group(2), str(error.value)
    # Values that differ in the first six digits keep the short form.
    with pytest.raises(AssertionError) as error:
        checks.assert_close(0.5, 0.75, name="x")
    assert "expected 0.75, got 0.5 " in str(error.value)


def _first_visible_failure(notebook: str, exercise: str, mutant: str) -> str:
    """Run an exercise's visible test cell against a mutant, here in this process; return the first failure."""
    from autograder.course import conventions, mutant_edits
    from autograder.course.solution_source import load_solution

    nb = load_solution(conventions.assignment(notebook))
    visible = next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == f"test_{exercise}")
    mutants = mutant_edits.mutants_by_exercise(nb, conventions.MUTANTS_DIR / f"{notebook}.toml", {exercise})
    namespace: dict = {}
    exec(next(m.code for m in mutants[exercise] if m.name == f"{exercise}__{mutant}"), namespace)
    with pytest.raises(AssertionError) as error:
        exec(visible, namespace)
    return str(error.value)


@pytest.mark.parametrize("mutant", ["k_dot_T", "transposes_first_two"])
def test_attention_with_the_wrong_transpose_gets_the_course_hint_first(mutant):
    # issue 18: q @ k.T passes the 2-D checks; the batched check comes first and names the fix.
    message = _first_visible_failure("03_attention", "scaled_dot_product_attention", mutant)
    assert "batch" in message and "transpose the last two dimensions of k (k.transpose(-2, -1)), not the first two" in message


def test_attention_with_the_softmax_over_the_queries_is_told_the_dimension():
    message = _first_visible_failure("03_attention", "scaled_dot_product_attention", "softmax_wrong_axis")
    assert "row sums" in message and "LAST dimension" in message and "dim=-1" in message and "dim=-2" in message


def test_a_tensor_preview_starts_at_the_first_mismatch_and_says_its_index():
    expected = torch.arange(40.0).reshape(5, 8)
    actual = expected.clone()
    actual[3, 6] = -1.0
    with pytest.raises(AssertionError) as failure:
        checks.assert_close(actual, expected, name="scores")
    lines = str(failure.value).splitlines()
    assert "First mismatch at index (3, 6): expected 30, got -1." in lines[0]
    assert lines[1] == "expected: [..., 30, 31, 32, 33, 34, 35, 36, 37, 38, 39] (from index (3, 6), 40 values, shape (5, 8))"
    assert lines[2] == "got:      [..., -1, 31, 32, 33, 34, 35, 36, 37, 38, 39] (from index (3, 6), 40 values, shape (5, 8))"


def test_a_preview_whose_first_value_differs_starts_at_the_beginning():
    with pytest.raises(AssertionError) as failure:
        checks.assert_close(np.array([1.0, 2.0]), np.array([9.0, 2.0]), name="x")
    assert "expected: [9, 2] (2 values, shape (2,))" in str(failure.value)


def test_a_list_preview_starts_at_the_first_differing_item():
    expected = list(range(200))
    actual = expected[:120] + [-5] + expected[121:]
    with pytest.raises(AssertionError) as failure:
        checks.assert_equal(actual, expected, name="ids")
    lines = str(failure.value).splitlines()
    assert lines[0] == "ids: expected 120 at [120], got -5."
    assert lines[1].startswith("expected: [..., 120, 121, 122") and lines[1].endswith("(from index 120 of 200 items)")
    assert lines[2].startswith("got:      [..., -5, 121, 122") and lines[2].endswith("(from index 120 of 200 items)")
    with pytest.raises(AssertionError) as failure:
        checks.assert_equal([1, 2], [1, 2, 3], name="short")
    assert "got:      [...] (from index 2 of 2 items)" in str(failure.value)


def test_a_numpy_scalar_is_shown_as_one():
    with pytest.raises(AssertionError, match=r"expected int, got int64\.\nexpected: 3\ngot:      numpy\.int64\(3\)"):
        checks.assert_equal(np.int64(3), 3, name="count")


def test_assert_kept_on_meta_passes_a_meta_result_and_values_read_and_fails_the_rest():
    checks.assert_kept_on_meta({"outcome": "device", "device": "meta"}, name="made on meta")
    checks.assert_kept_on_meta({"outcome": "needs values", "error": "RuntimeError: item"}, name="reads values")
    for report in ({"outcome": "device", "device": "cpu"}, {"outcome": "mismatch", "error": "cpu vs meta"},
                   {"outcome": "no tensor"}):
        with pytest.raises(checks.CheckFailure, match="with its tensors on the meta device"):
            checks.assert_kept_on_meta(report, name="a device mistake", hint="make it on x.device")
    with pytest.raises(TypeError):
        checks.assert_kept_on_meta("meta", name="not a report")
    checks.assert_kept_on_meta({"outcome": "device", "device": "meta"}, name="a rearrangement", values_may_be_read=False)
    with pytest.raises(checks.CheckFailure, match="needs values"):
        checks.assert_kept_on_meta({"outcome": "needs values", "error": "copy out of meta"}, name="a rearrangement",
                                   values_may_be_read=False)


def _message(check, *args, **kwargs) -> str:
    with pytest.raises(checks.CheckFailure) as failed:
        check(*args, **kwargs)
    return str(failed.value)


def test_within_values_withheld_a_message_shows_no_value():
    """Issue 47: a hidden test's messages (the judge runs them within ``values_withheld``) say what differs, where
    and by how much, never a value: a result can be its input (an identity-like answer)."""
    x = torch.tensor([[0.4963, 0.7682, 0.0885], [0.1320, 0.3074, 0.6341]])
    with checks.values_withheld():
        assert not checks.values_shown()
        messages = [
            _message(checks.assert_close, x, 2 * x, name="double"),
            _message(checks.assert_close, 0.4963, 2.0, name="loss"),
            _message(checks.assert_equal, [495, 558, 321], [495, 558, 322], name="ids"),
            _message(checks.assert_equal, {"quiet": 1, "words": 2}, {"quiet": 1, "word": 2}, name="counts"),
            _message(checks.assert_equal, {"quiet": 1, "words": 2}, {"quiet": 1, "words": 3}, name="counts"),
            _message(checks.assert_equal, {"quiet", "words"}, {"quiet"}, name="set"),
            _message(checks.assert_equal, "quiet words", "quiet wordz", name="text"),
            _message(checks.assert_raises, ValueError, lambda: {}["quiet 0.4963"], name="raises"),
            _message(checks.assert_kept_on_meta, {"outcome": "mismatch", "error": "0.4963 quiet"}, name="meta")]
    assert checks.values_shown()
    assert messages == [
        "double: 6 of 6 values differ (largest difference 0.77, atol=1e-05, rtol=0.0001). First mismatch at index (0, 0).",
        "loss: the number differs from the expected one (difference 1.5, tolerance 0.00021).",
        "ids: the int at [2] differs from the expected one (difference 1).",
        "counts: keys differ: 1 missing, 1 unexpected.",
        "counts: the int at [key 2 of 2] differs from the expected one (difference 1).",
        "set: sets differ: 0 missing, 1 unexpected.",
        "text: the str differs from the expected one (from position 10 on; length 11, expected 11).",
        "raises: expected ValueError, but it raised KeyError",
        "meta: with its tensors on the meta device, the call gave the outcome 'mismatch'."]
    assert all(word not in " ".join(messages) for word in ("0.4963", "0.768", "495", "quiet", "words'"))


def test_assert_error_boundary_checks_both_sides_of_the_boundary():
    def bits(n, rule):
        if rule(n):
            raise ValueError("need at least one token")
        return 1.0 / n

    checks.assert_error_boundary(ValueError, lambda n: bits(n, lambda k: k < 1), raises=(0, -1), allowed=(1,), name="n")
    with pytest.raises(checks.CheckFailure, match=r"n = -1 \(outside the allowed range\): expected ValueError to be raised"):
        checks.assert_error_boundary(ValueError, lambda n: bits(n, lambda k: k == 0), raises=(0, -1), allowed=(1,), name="n")
    with pytest.raises(checks.CheckFailure, match=r"n = 1 \(just inside the allowed range\): expected no error, but it raised ValueError"):
        checks.assert_error_boundary(ValueError, lambda n: bits(n, lambda k: k <= 1), raises=(0, -1), allowed=(1,), name="n")
    with checks.values_withheld(), pytest.raises(checks.CheckFailure) as failed:
        checks.assert_error_boundary(ValueError, lambda n: bits(n, lambda k: k <= 1), raises=(), allowed=(1,), name="n")
    assert "need at least" not in str(failed.value)
