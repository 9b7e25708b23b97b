"""``autograder.judge.handles``: what a test cell's exercise names send to the student's process (calls,
attribute reads, probes), what cannot be done with them, and the exceptions that come back."""

from __future__ import annotations

import time

import pytest
import torch

from autograder.judge import wire
from autograder.judge.handles import Handle, Probes, StudentCodeError, exception_from
from autograder.judge.protocol import MAX_ERROR_MESSAGE_CHARS
from utils import probes as student_probes
from utils.checks import CheckFailure


class FakeSession:
    def __init__(self, value="answer"):
        self.asked = []
        self.names = []   # the notebook name each call's contract is looked up by (None for an object)
        self.value = value
        self.call_limit = None

    def send(self, value):
        return wire.encode(value)

    def ask(self, message, label, sent=None, name=None):
        self.asked.append((message, label, sent))
        self.names.append(name)
        return self.value


def test_a_call_sends_its_arguments_by_value_and_keeps_them_for_the_in_place_check():
    session = FakeSession()
    f = Handle(session, "softmax", "your softmax")
    x = torch.tensor([1.0, 2.0])
    assert f(x, dim=-1) == "answer"
    message, label, sent = session.asked[0]
    assert label == "your softmax"
    assert message["op"] == "call" and message["target"] == {"name": "softmax"} and message["may_mutate"] is False
    assert message["args"] == wire.encode([x]) and message["kwargs"] == wire.encode({"dim": -1})
    assert sent[0][0] is x and sent[1] == {"dim": -1}
    assert session.names == ["softmax"]


def test_an_object_from_the_student_is_addressed_by_its_reference_number():
    session = FakeSession()
    model = Handle(session, 7, "object from your MultiHeadAttention")
    model(1)
    assert model.training == "answer"
    call = session.asked[0][0]
    assert call["target"] == {"ref": 7} and call["op"] == "call" and session.names[0] is None
    read = session.asked[1]
    assert read[0] == {"op": "getattr", "target": {"ref": 7}, "name": "training"}
    assert read[1] == "object from your MultiHeadAttention.training"
    assert repr(model) == "<object from your MultiHeadAttention>"


def test_dunder_reads_and_any_write_stay_in_the_judge():
    session = FakeSession()
    f = Handle(session, "f", "your f")
    with pytest.raises(AttributeError):
        f.__wrapped__
    with pytest.raises(AttributeError, match="cannot be set from a test"):
        f.weight = 3
    assert session.asked == []


def test_probes_send_the_target_and_refuse_anything_but_a_handle():
    session = FakeSession()
    probes = Probes(session)
    f = Handle(session, "f", "your f")
    probes.probe("gradients", f, (torch.ones(2),), {}, grad_output=None)
    message, label, _ = session.asked[0]
    assert label == "probes.gradients" and message["kind"] == "gradients" and message["target"] == {"name": "f"}
    assert message["extra"] == wire.encode({"grad_output": None})
    probes.probe("make", "torch.nn.Linear", (4, 3), {})
    assert session.asked[1][0]["target"] == {"literal": "torch.nn.Linear"}
    with pytest.raises(TypeError, match="probes.gradients needs one of the notebook's functions.*got function"):
        probes.probe("gradients", lambda x: x, (), {})
    with pytest.raises(TypeError, match="probes.mutating_call needs .*got int"):
        probes.mutating_call(3, (), {})


def test_a_mutating_call_skips_the_in_place_check():
    session = FakeSession()
    Probes(session).mutating_call(Handle(session, "shuffle_", "your shuffle_"), [[3, 1, 2]], {})
    message, _, sent = session.asked[0]
    assert message["may_mutate"] is True and sent is None


def test_a_tests_time_limit_applies_inside_the_block_only():
    session = FakeSession()
    session.call_limit = (5.0, "outer")
    probes = Probes(session)
    with probes.time_limit(20, "train_bpe on a 50 KB corpus"):
        assert session.call_limit == (20.0, "train_bpe on a 50 KB corpus")
    assert session.call_limit == (5.0, "outer")
    with pytest.raises(ZeroDivisionError):
        with probes.time_limit(1, "x"):
            1 / 0
    assert session.call_limit == (5.0, "outer")


def test_in_the_students_kernel_a_time_limit_counts_cpu_seconds_not_the_clock(monkeypatch):
    monkeypatch.setattr(student_probes, "_judge", None)
    with student_probes.time_limit(0.05, "sleeping"):
        time.sleep(0.2)                 # no CPU: within the limit, however long the clock (or the load) says
    with pytest.raises(CheckFailure, match=r"^spinning: took 0\.\d+ CPU seconds; the limit at grading time is 0.05 s"):
        with student_probes.time_limit(0.05, "spinning"):
            end = time.process_time() + 0.1
            while time.process_time() < end:
                pass


def test_a_builtin_exception_comes_back_as_its_own_type_with_where_it_was_raised():
    error = exception_from({"type": "ValueError", "message": "bad shape", "where": ["line 3 in f: a", "line 9 in g: b"]},
                           "your f")
    assert type(error) is ValueError
    assert str(error) == "bad shape\n(raised in your code: line 9 in g: b)"
    assert type(exception_from({"type": "KeyError", "message": "'k'"}, "f")) is KeyError


@pytest.mark.parametrize("error, text", [
    ({"type": "ShapeError", "message": "mine"}, "ShapeError: mine"),                # the student's own class
    ({"type": "SystemExit", "message": "0"}, "SystemExit: 0"),                      # not an Exception
    ({"type": "open", "message": "x"}, "open: x"),                                  # a builtin, not a type
    ({"type": "UnicodeDecodeError", "message": "x"}, "UnicodeDecodeError: x"),      # a constructor wanting 5 arguments
    ({"message": "x"}, "Error: x"),
    ("ValueError", "your f failed"),
])
def test_other_exceptions_become_student_code_errors(error, text):
    raised = exception_from(error, "your f")
    assert type(raised) is StudentCodeError and str(raised) == text


def test_what_comes_back_is_bounded():
    raised = exception_from({"type": "T" * 500, "message": "m" * 10_000, "where": "not a list"}, "f")
    assert str(raised) == "T" * 100 + ": " + "m" * MAX_ERROR_MESSAGE_CHARS
