"""The net that keeps a hidden test's inputs off the feedback page (``autograder.judge.hidden_values``): runs
of an input's numbers as Python, NumPy and PyTorch print them, string inputs; sizes and single numbers stay."""

from __future__ import annotations

import numpy as np
import torch

from autograder.judge.hidden_values import HiddenInputs, withheld


def _recorded(*values) -> HiddenInputs:
    hidden = HiddenInputs()
    hidden.add_arguments(list(values))
    return hidden


def test_runs_of_a_tensors_values_are_hidden_however_they_are_printed():
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    hidden = _recorded(x, 7)
    for printed in (str(x), str(x[1:, 2:]), repr(x.tolist()), str(x.numpy()), str(x.double()),
                    ", ".join(f"{v:.6g}" for v in x.reshape(-1).tolist()[5:9]), str(x * 1e-6)[:0] + str(x[0] * 1)):
        redacted = hidden.redact(printed)
        assert not any(f"{v:.4f}" in redacted for v in x.reshape(-1).tolist()), (printed, redacted)
        assert "…" in redacted


def test_sizes_positions_single_numbers_and_other_values_stay():
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    hidden = _recorded(x, torch.arange(300, 306), 20, torch.tensor([3, 0]), torch.randint(0, 4, (50,)))
    text = (f"expected shape (4, 6), got (6, 4); 3 of 24 values differ (largest difference 0.42); vocab 20; "
            f"first value {x[0, 0].item():.4f}; tensor([1.5000, 2.2500, 3.1250]); the text [3, 0]; "
            f"at index (301, 302, 303); shape (300, 301, 302); [1, 0, 2, 3]")
    assert hidden.redact(text) == text
    assert hidden.redact("ids [301, 302, 303]") == "ids […, …, …]", "3 consecutive values of an input, 9 digits"
    assert hidden.redact("ids [300, 302, 303]") == "ids [300, 302, 303]", "not consecutive in the input"


def test_numbers_of_two_inputs_make_no_run():
    hidden = _recorded([701, 802, 903], [1004, 1105])
    assert hidden.redact("[903, 1004, 1105]") == "[903, 1004, 1105]", "two inputs: no run across them"
    assert hidden.redact("[701, 802, 903, 1004]") == "[…, …, …, 1004]"


def test_string_inputs_keys_and_their_bytes_are_hidden():
    hidden = _recorded("ab[SEP]ab", {"<s>": 17, "quietly hidden words": 3}, "S", "table")
    assert hidden.redact("encode('ab[SEP]ab') and \"<s>\" and '<s>'") == "encode('…') and \"<s>\" and '…'"
    assert hidden.redact("some quietly hidden words here; S and 'S'; a stable table") == \
        "some … here; S and 'S'; a stable table", "short words unquoted, or one letter, say nothing"
    assert hidden.redact(str(list("ab[SEP]ab".encode()))) == "[…, …, …, …, …, …, …, …, …]"


def test_numpy_arrays_and_nested_lists_are_recorded():
    hidden = _recorded(np.array([[0.25, 0.125], [3.5, 9.75]]), [[11, 12, 13], [14, 15, 16]])
    assert hidden.redact("[[0.25  0.125]\n [3.5   9.75 ]]") == "[[…  …]\n […   … ]]"
    assert hidden.redact("11, 12, 13, 14, 15") == "…, …, …, …, …"


def test_outputs_are_redacted_in_place_and_nothing_recorded_changes_nothing():
    hidden = _recorded(torch.tensor([0.4963, 0.7682, 0.0885]))
    outputs = [{"output_type": "stream", "text": "x = tensor([0.4963, 0.7682, 0.0885])"},
               {"output_type": "error", "ename": "E", "evalue": "[0.4963, 0.7682, 0.0885]",
                "traceback": ["E: [0.4963, 0.7682, 0.0885]"]},
               {"output_type": "execute_result", "data": {"text/plain": "0.4963 0.7682 0.0885"}}]
    hidden.redact_outputs(outputs)
    assert [outputs[0]["text"], outputs[1]["evalue"], outputs[1]["traceback"][0], outputs[2]["data"]["text/plain"]] == [
        "x = tensor([…, …, …])", "[…, …, …]", "E: […, …, …]", "… … …"]
    assert not HiddenInputs() and HiddenInputs().redact("[0.4963, 0.7682, 0.0885]") == "[0.4963, 0.7682, 0.0885]"


def test_what_a_hidden_test_shows_of_a_students_exception():
    assert withheld("your f", "KeyError", ["line 1 in <module>: f()", "line 9 in f: raise KeyError(x)"]) == (
        "your f raised KeyError (line 9 in f); a hidden test does not show its message, which can hold the "
        "test's inputs.")
    assert withheld("your f", "tensor([0.4963])", ["0.4963"]).startswith("your f raised an exception;")


def test_the_judge_knows_a_hidden_test_by_nbgraders_marker():
    from autograder.course.conventions import BEGIN_HIDDEN
    from autograder.judge.session import HIDDEN_MARKER

    assert HIDDEN_MARKER == BEGIN_HIDDEN


def test_a_hidden_tests_own_message_loses_short_runs_too():
    """In the hidden test's own message (``strict``) a hand-written input named in a check goes too, even a
    short one; positions stay. In the student's later outputs only runs with enough digits count."""
    hidden = HiddenInputs()
    hidden.add_arguments([[5, 5, 5, 5], (5, 5), 9])
    hidden.add_arguments([torch.tensor([3, 0]), 4])
    name = "merge([5, 5, 5, 5], (5, 5), 9): the int at [3][0] differs; the text [3, 0]; index (5, 5, 5)"
    assert hidden.redact(name, strict=True) == \
        "merge([…, …, …, …], (…, …), 9): the int at [3][0] differs; the text […, …]; index (5, 5, 5)"
    assert hidden.redact(name) == name
