"""Inputs modified in place fail at grading, as a property of the judge (not of each test).

Every call of a handle checks, in the student's process, that the by-value arguments are unchanged
afterwards (``kernel_agent.changed_arguments`` reports the facts); the judge compares the report
with what the test sent and builds the failure (``judge.changes.changed_inputs``). The quick tests drive
both halves directly; the slow one grades a fixture course through the whole pipeline.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

from autograder.course import submissions
from autograder.judge import wire
from autograder.judge.changes import changed_inputs
from autograder.sandbox.kernel_agent import Agent

STUDENT_CODE = '''
import torch

def softmax(x):
    x[0, :3] = 0.0                  # writes into the caller's tensor
    return x.softmax(-1)

def good(x, ids=None, table=None):
    return x * 2

def appends(tokens, extra):
    tokens.append(extra)
    return len(tokens)

def adds_key(table, key):
    table[key] = 5
    return 0

def wants_grad(x):
    x.requires_grad_(True)
    return x.detach() * 2

def reshapes(x):
    x.resize_(6)
    return 0

def recasts(x):
    x.data = x.data.double()
    return 0

def nested(batch):
    batch["ids"][1] += 1
    return 0

def star(*tensors):
    tensors[1].zero_()
    return 0

def numpy_sort(a):
    a.sort()
    return 0

def scale_(x, factor):
    """Multiplies x by factor in place (its contract says so); returns None."""
    x.mul_(factor)

def uses_model(model, x, generator):
    model.weight.data.zero_()            # a remote reference: its state may change
    torch.rand(3, generator=generator)   # a generator's state changes: exempt too
    return model(x)

def nan_safe(x):
    return torch.nan_to_num(x)           # reads only: an input with NaNs is unchanged

def draws_globally(n, generator):
    return torch.randint(0, 10, (n,))    # ignores its generator: the caller's global stream moves

def reseeds_globally(n, generator):
    torch.manual_seed(generator.initial_seed())   # reproducible, but resets the caller's global state
    return torch.randint(0, 10, (n,))

def numpy_draw(n, generator):
    import numpy
    return torch.from_numpy(numpy.random.randint(0, 10, n))

def python_draw(n, generator):
    import random
    return torch.tensor([random.randrange(10) for _ in range(n)])

def draws_from_its_generator(n, generator):
    return torch.randint(0, 10, (n,), generator=generator)

def mask_nothing(ids, p):
    if p == 0:
        return ids, torch.zeros_like(ids, dtype=torch.bool)   # the degenerate branch: the caller's ids
    return ids.clone(), ids > 0

def same_memory(x):
    return x.view_as(x)

def keeps_list(tokens):
    return tokens

def reshaped_view(x):
    return x.view(-1)                     # a view with another shape: not the caller's tensor as it is

def autograd_left_off(x):
    torch.set_grad_enabled(False)         # meant: a with torch.no_grad(): block, which restores it
    return x * 2

def float64_left_on(x):
    torch.set_default_dtype(torch.float64)
    return x * 2

def autograd_off_in_a_block(x):
    with torch.no_grad():
        return x * 2
'''



class Student:
    """The runner's half (an ``Agent`` over the student's namespace), driven the way the judge does."""

    def __init__(self):
        self.namespace: dict = {}
        exec(STUDENT_CODE, self.namespace)  # noqa: S102 - the test's own code
        self.agent = Agent(self.namespace)

    def call(self, name, *args, may_mutate=False, **kwargs):
        """(reply, judge's verdict) for ``name(*args, **kwargs)``."""
        encoded = lambda value: wire.encode(value)  # noqa: E731
        request = {"op": "call", "target": {"name": name}, "args": encoded(list(args)),
                   "kwargs": encoded(dict(kwargs)), "may_mutate": may_mutate}
        reply = self.agent.handle(request)
        assert reply["ok"] is True, reply
        return reply, changed_inputs(f"your {name}", args, kwargs, reply.get("changed"))


@pytest.fixture(scope="module")
def student():
    return Student()


def test_a_tensor_written_into_fails_naming_the_argument(student):
    x = torch.ones(3, 4)
    _, verdict = student.call("softmax", x)
    assert verdict is not None and verdict.startswith(
        "softmax modified its argument `x` in place (3 of 12 values changed); return a new tensor instead"), verdict
    assert torch.equal(x, torch.ones(3, 4)), "the judge's own tensor is never touched"


def test_a_correct_function_passes_and_no_report_is_sent(student):
    reply, verdict = student.call("good", torch.ones(2, 3), ids=[1, 2], table={"a": torch.zeros(2)})
    assert verdict is None and "changed" not in reply


@pytest.mark.parametrize("name, args, kwargs, expected", [
    ("appends", ([1, 2, 3], 9), {}, "appends modified its argument `tokens` in place (its length changed from 3 to 4)"),
    ("adds_key", ({"a": 1}, "b"), {}, "adds_key modified its argument `table` in place (1 key added ('b'))"),
    ("wants_grad", (torch.ones(2),), {},
     "wants_grad modified its argument `x` in place (its requires_grad changed from False to True)"),
    ("reshapes", (torch.ones(2, 3),), {}, "reshapes modified its argument `x` in place (its shape changed from (2, 3) to (6,))"),
    ("recasts", (torch.ones(2),), {},
     "recasts modified its argument `x` in place (its dtype changed from torch.float32 to torch.float64)"),
    ("nested", ({"ids": torch.zeros(2, 3, dtype=torch.long), "g": torch.Generator().manual_seed(1)},), {},
     "nested modified its argument `batch['ids']` in place (3 of 6 values changed)"),
    ("star", (torch.ones(2), torch.ones(5)), {}, "star modified its argument `tensors[1]` in place (5 of 5 values changed)"),
    ("numpy_sort", (np.array([3.0, 1.0, 2.0]),), {},
     "numpy_sort modified its argument `a` in place (3 of 3 values changed); return a new array instead"),
    ("scale_", (), {"x": torch.ones(3), "factor": 2.0}, "scale_ modified its argument `x` in place (3 of 3 values changed)"),
])
def test_every_kind_of_change_is_named(student, name, args, kwargs, expected):
    _, verdict = student.call(name, *args, **kwargs)
    assert verdict is not None and verdict.startswith(expected), f"expected {expected!r}, got {verdict!r}"


def test_references_and_generators_are_exempt(student):
    model = student.agent.remember(torch.nn.Linear(3, 2))
    request = {"op": "call", "target": {"name": "uses_model"},
               "args": [{"$": "ref", "id": model}, wire.encode(torch.ones(1, 3)),
                        wire.encode(torch.Generator().manual_seed(0))],
               "kwargs": {"$": "dict", "items": []}}
    reply = student.agent.handle(request)
    assert reply["ok"] is True and "changed" not in reply, reply


def test_unchanged_nans_are_not_a_change(student):
    _, verdict = student.call("nan_safe", torch.tensor([float("nan"), 1.0]))
    assert verdict is None


def test_the_opt_out_skips_the_check(student):
    reply, verdict = student.call("scale_", torch.ones(3), 2.0, may_mutate=True)
    assert verdict is None and "changed" not in reply


def test_the_judge_believes_only_real_differences(student):
    """A runner that reports a change that is not one (or garbage) fails nobody."""
    x = torch.ones(2, 2)
    forged = [{"arg": 0, "name": "x", "path": [], "after": wire.encode(torch.ones(2, 2))},
              {"arg": 7, "name": "y", "path": [], "after": None}, {"arg": 0, "path": [0, 0, 0]}, "junk",
              {"arg": 0, "name": "<script>", "path": "x", "after": 3}]
    assert changed_inputs("your f", (x,), {}, forged) is None
    assert changed_inputs("your f", (x,), {}, "not a list") is None
    real = [{"arg": 0, "name": "<b>x</b>", "path": [], "after": wire.encode(torch.zeros(2, 2))}]
    assert changed_inputs("your f", (x,), {}, real).startswith(
        "f modified its argument `#1` in place (4 of 4 values changed)"), "an odd name is not repeated"


# --------------------------------------------------------------------------------------------------
# Through the whole grader: a fixture course with one exercise that must not mutate and one whose
# contract says it does (its tests use the opt-out)

SOLUTIONS = {
    "double": '''import torch

def double(x):
    """Return 2 * x as a new tensor (any shape); x is not modified."""
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION''',
    "scale_": '''import torch

def scale_(x, factor):
    """Multiply the tensor x by factor in place (x is modified) and return None."""
    ### BEGIN SOLUTION
    x.mul_(factor)
    ### END SOLUTION''',
}
TESTS = {
    "double": ('''import torch
from utils import checks
checks.assert_close(double(torch.tensor([1.0, -2.0])), torch.tensor([2.0, -4.0]), name="double")
print("visible tests passed")''', '''# Hidden tests for double run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks
checks.assert_close(double(torch.arange(6.0).reshape(2, 3)), torch.arange(6.0).reshape(2, 3) * 2, name="double")
### END HIDDEN TESTS'''),
    "scale_": ('''import torch
from utils import checks, probes
checks.assert_equal(probes.mutating_call(scale_, torch.ones(2), 3.0), None, name="scale_ returns")
print("visible tests passed")''', '''# Hidden tests for scale_ run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes
traced = probes.traced_call(scale_, torch.arange(4.0), 2.0)
checks.assert_close(traced.args_after[0], torch.arange(4.0) * 2, atol=0, rtol=0, name="x after scale_",
                    hint="scale_ multiplies x in place.")
### END HIDDEN TESTS'''),
}


def _exercises() -> dict:
    """The fixture's two exercises, each with a visible cell (1 point) and a hidden one (2)."""
    return {name: (solution, [(f"test_{name}", 1, TESTS[name][0]), (f"test_{name}_hidden", 2, TESTS[name][1])])
            for name, solution in SOLUTIONS.items()}


# student -> (answers, expected score of 6)
STUDENTS = {
    "correct": ({}, 6),
    "double_in_place": ({"double": "import torch\ndef double(x):\n    x.mul_(2)\n    return x"}, 3),
    "double_through_a_view": ({"double": "import torch\ndef double(x):\n    y = x.view(-1)\n    y *= 2\n    return x"}, 3),
    "scale_copies": ({"scale_": "import torch\ndef scale_(x, factor):\n    x = x * factor"}, 4),
}
# Issue 28: code that mutates its input and replaces the runner's change report in its own process. The
# grader reads the source (``autograder.batch.tampering``) and fails every inputs-unchanged check of the
# notebook, so the forgery costs what mutating costs, at least; scale_'s tests (the opt-out) still run.
FORGED_DOUBLE = "import torch\n{forge}\ndef double(x):\n    x.mul_(2)\n    return x"
FORGERIES = {
    "forges_by_import": "import autograder.sandbox.kernel_agent as agent\nagent.changed_arguments = lambda *a, **k: []",
    "forges_through_sys_modules": ("import sys\nsys.modules['autograder.sandbox.' + 'kernel_agent'].changed_arguments = "
                                   "lambda *a, **k: []"),
    "forges_through_the_garbage_collector": (
        "import gc\nfor thing in gc.get_objects():\n    if type(thing).__name__ == 'Agent':\n"
        "        thing.handle.__func__.__globals__['changed_arguments'] = lambda *a, **k: []"),
    "forges_behind_a_magic": ("%time pass\nimport sys as s\nfor m in list(s.modules.values()):\n"
                              "    if hasattr(m, 'changed_arguments'):\n        m.changed_arguments = lambda *a, **k: []"),
}
STUDENTS.update({name: ({"double": FORGED_DOUBLE.format(forge=forge)}, 3) for name, forge in FORGERIES.items()})
STUDENTS["correct_classmate"] = ({}, 6)


@pytest.mark.slow
def test_grading_fails_an_answer_that_modifies_its_input(tmp_path):
    from fixture_course import grade_class, make_exercises_course, release_path

    root = tmp_path / "course"
    assignment = make_exercises_course(root, _exercises())
    rows, out = grade_class(root, {student: submissions.filled_in(assignment, answers, release_path=release_path(root))
                                   for student, (answers, _) in STUDENTS.items()})
    for student, (_, score) in STUDENTS.items():
        assert (rows[student].score, rows[student].max_score, rows[student].status) == (score, 6, "ok"), (
            f"{student}: {rows[student].score} / {rows[student].max_score}, {rows[student].status} ({rows[student].detail})")
    page = (out / "feedback" / "double_in_place" / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    for message in ("double modified its argument `x` in place (2 of 2 values changed); return a new tensor instead",
                    "double modified its argument `x` in place (5 of 6 values changed); return a new tensor instead"):
        assert message in page, f"the feedback page should say: {message}"
    assert ">double: hidden tests</a>" in page and ">scale_: visible tests</a>" in page, "summary entries are named"
    assert "white-space: pre-wrap" in page and "<script" not in page
    with open(out / "grades.csv", newline="") as handle:
        assert {r["student_id"]: r["score"] for r in csv.DictReader(handle)}["double_in_place"] == "3"
    for student in FORGERIES:
        assert "reaches into the grader's machinery" in rows[student].flags, (student, rows[student].flags)
        page = (out / "feedback" / student / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
        said = "double: the grader cannot check that your code leaves its inputs unchanged (reaches into the grader"
        assert said in page or said.replace("'", "&#x27;") in page, student
    assert rows["correct"].flags == "" and rows["correct_classmate"].flags == ""


@pytest.mark.parametrize("name, which", [("draws_globally", "torch's"), ("reseeds_globally", "torch's"),
                                         ("numpy_draw", "numpy's"), ("python_draw", "random's")])
def test_a_function_given_a_generator_that_touches_a_global_one_fails(student, name, which):
    """Issue 49: 'the generator is the only source of randomness' is observed on every call given one."""
    reply, _ = student.call(name, 5, torch.Generator().manual_seed(3))
    from autograder.judge.changes import global_rng_used
    message = global_rng_used(f"your {name}", reply.get("global_rng"))
    assert reply.get("global_rng") == [which[:-2]], reply.get("global_rng")
    assert message.startswith(f"{name} changed the global random state: it drew from {which}"), message


def test_drawing_from_the_given_generator_leaves_no_report(student):
    state = torch.random.get_rng_state()
    reply, _ = student.call("draws_from_its_generator", 5, generator=torch.Generator().manual_seed(3))
    assert "global_rng" not in reply and torch.equal(state, torch.random.get_rng_state())


def test_without_a_generator_global_draws_are_not_judged(student):
    reply, _ = student.call("draws_globally", 5, None)
    assert "global_rng" not in reply


@pytest.mark.parametrize("name, args, expected", [
    ("mask_nothing", (torch.arange(4), 0), "mask_nothing returned the caller's own `ids` as part [0] of its result"),
    ("same_memory", (torch.ones(3),), "same_memory returned the caller's own `x` as its result"),
    ("keeps_list", ([1, 2],), "keeps_list returned the caller's own `tokens` as its result"),
])
def test_returning_the_callers_own_object_fails_on_every_call(student, name, args, expected):
    """Issue 49: 'a new object' is observed on every call, degenerate branches included."""
    from autograder.judge.changes import argument_returned
    reply, _ = student.call(name, *args)
    message = argument_returned(f"your {name}", reply.get("returned_argument"))
    assert message.startswith(expected), message


def test_new_results_are_not_reported_and_views_are_reported_as_sharing(student):
    """A view with another shape is reported as sharing memory; the judge fails it only for a name whose contract
    promises a new result (``Session._kept_to_contract``), so split_heads may return one."""
    for name, args in (("mask_nothing", (torch.arange(4), 1)), ("good", (torch.ones(2),))):
        reply, _ = student.call(name, *args)
        assert "returned_argument" not in reply, (name, reply.get("returned_argument"))
    reply, _ = student.call("reshaped_view", torch.ones(2, 3))
    assert reply.get("returned_argument") == [{"path": [], "name": "x", "shares": True}], reply
    from autograder.judge.changes import argument_returned
    assert argument_returned("your reshaped_view", reply["returned_argument"]).startswith(
        "reshaped_view returned a view of the caller's `x` as its result (a tensor over part of its memory")


@pytest.mark.parametrize("name, entry", [("autograd_left_off", "autograd: on -> off"),
                                         ("float64_left_on", "default dtype: float32 -> float64")])
def test_a_call_that_leaves_a_global_mode_changed_fails_and_a_block_that_restores_it_does_not(student, name, entry):
    """Issue 49: 'modes restored' is observed on every call (autograd and the default dtype)."""
    from autograder.judge.changes import global_mode_left_changed
    try:
        reply, _ = student.call(name, torch.ones(2))
    finally:                               # the runner's half runs in this process: put the modes back
        torch.set_grad_enabled(True)
        torch.set_default_dtype(torch.float32)
    assert reply.get("global_mode") == [entry], reply.get("global_mode")
    message = global_mode_left_changed(f"your {name}", reply.get("global_mode"))
    assert message.startswith(f"{name} left PyTorch's global state changed ({entry})"), message
    reply, _ = student.call("autograd_off_in_a_block", torch.ones(2))
    assert "global_mode" not in reply and torch.is_grad_enabled()
