"""Issue 49's bar: each clause every exercise shares is observed on every graded call, and breaking it costs exactly
that clause's points. A fixture course with three exercises, each with a core hidden cell and an edge cell whose
calls take a degenerate branch; each wrong answer breaks one shared clause on that branch only (the caller's own
tensor returned, a view of part of it, a draw from the global generator, autograd left off, a 0-d tensor where the
contract declares a Python float), so each loses the edge cell's one point and nothing else, through the whole
grader and its sandbox."""

from __future__ import annotations

import pytest

from autograder.course import submissions

SOLUTIONS = {
    "noisy_copy": '''import torch

def noisy_copy(x, p, generator):
    """x plus Gaussian noise of scale p, drawn from `generator` only; p == 0 gives an exact copy of x.

    Returns a new tensor (never x itself); x is not modified; the global random state and autograd are left as
    they were.
    """
    ### BEGIN SOLUTION
    if p == 0:
        return x.clone()
    return x + p * torch.randn(x.shape, generator=generator)
    ### END SOLUTION''',
    "first_row": '''import torch

def first_row(x):
    """A new tensor holding the first row of the 2-D tensor x (it shares no memory with x, also for one row)."""
    ### BEGIN SOLUTION
    return x[0].clone()
    ### END SOLUTION''',
    "mean_value": '''import torch

def mean_value(x):
    """The mean of the tensor x's entries. Returns a Python float; an empty x gives 0.0."""
    ### BEGIN SOLUTION
    return float(x.mean()) if x.numel() else 0.0
    ### END SOLUTION''',
}
CONTRACTS = '''[noisy_copy]
returns = "tensor"
generator = "generator"

[first_row]
returns = "tensor"

[mean_value]
returns = "float"
'''
TESTS = {
    "noisy_copy": ('''import torch
from utils import checks
x = torch.ones(3)
out = noisy_copy(x, 0.5, torch.Generator().manual_seed(0))
checks.assert_close(out, x + 0.5 * torch.randn(3, generator=torch.Generator().manual_seed(0)), name="noisy_copy")
print("noisy_copy: visible tests passed")''', '''import torch
from utils import checks
x = torch.arange(6.0)
out = noisy_copy(x, 2.0, torch.Generator().manual_seed(5))
checks.assert_close(out, x + 2.0 * torch.randn(6, generator=torch.Generator().manual_seed(5)), name="noisy_copy, p = 2")''',
                   '''import torch
from utils import checks
x = torch.arange(4.0)
checks.assert_close(noisy_copy(x, 0.0, torch.Generator().manual_seed(1)), x, name="noisy_copy with p = 0")'''),
    "first_row": ('''import torch
from utils import checks
checks.assert_close(first_row(torch.ones(2, 3)), torch.ones(3), name="first_row")
print("first_row: visible tests passed")''', '''import torch
from utils import checks
checks.assert_close(first_row(torch.arange(6.0).reshape(3, 2)), torch.tensor([0.0, 1.0]), name="first_row of 3 rows")''',
                  '''import torch
from utils import checks
checks.assert_close(first_row(torch.arange(2.0).reshape(1, 2)), torch.tensor([0.0, 1.0]), name="first_row of one row")'''),
    "mean_value": ('''import torch
from utils import checks
checks.assert_close(mean_value(torch.tensor([1.0, 3.0])), 2.0, name="mean_value")
print("mean_value: visible tests passed")''', '''import torch
from utils import checks
checks.assert_close(mean_value(torch.arange(5.0)), 2.0, name="mean_value of 0..4")''', '''import torch
from utils import checks
checks.assert_close(mean_value(torch.zeros(0)), 0.0, name="mean_value of an empty tensor")'''),
}
# student -> (answers, expected score of 12); each wrong answer breaks one clause on its degenerate branch only
NOISY = "import torch\ndef noisy_copy(x, p, generator):\n    if p == 0:\n{zero}\n    return x + p * torch.randn(x.shape, generator=generator)"
STUDENTS = {
    "correct": ({}, 12),
    "returns_the_callers_tensor": ({"noisy_copy": NOISY.format(zero="        return x")}, 11),
    "returns_a_view_of_part_of_it": ({"first_row": "def first_row(x):\n    return x[0] if len(x) == 1 else x[0].clone()"},
                                     11),
    "draws_from_the_global_generator": ({"noisy_copy": NOISY.format(
        zero="        return x + 0 * torch.randn(x.shape)")}, 11),
    "leaves_autograd_off": ({"noisy_copy": NOISY.format(zero="        torch.set_grad_enabled(False)\n        return x.clone()")}, 11),
    "returns_a_tensor_for_a_float": ({"mean_value": "import torch\ndef mean_value(x):\n"
                                      "    return float(x.mean()) if x.numel() else torch.tensor(0.0)"}, 11),
}
MESSAGES = {"returns_the_callers_tensor": "noisy_copy returned the caller's own `x` as its result",
            "returns_a_view_of_part_of_it": "first_row returned a view of the caller's `x` as its result",
            "draws_from_the_global_generator": "noisy_copy changed the global random state",
            "leaves_autograd_off": "noisy_copy left PyTorch's global state changed (autograd: on -&gt; off)",
            "returns_a_tensor_for_a_float": "mean_value returned a tensor (0-d), where a Python float is declared"}


WRAP = "# Hidden tests for {0} run when your notebook is graded.\n### BEGIN HIDDEN TESTS\n{1}\n### END HIDDEN TESTS"


def _exercises() -> dict:
    """The fixture's exercises: each with a visible cell (1 point), a core hidden cell (2) and an edge cell (1)."""
    return {name: (solution, [(f"test_{name}", 1, TESTS[name][0]), (f"test_{name}_hidden", 2, WRAP.format(name, TESTS[name][1])),
                              (f"test_{name}_hidden_edges", 1, WRAP.format(name, TESTS[name][2]))])
            for name, solution in SOLUTIONS.items()}


@pytest.mark.slow
def test_each_shared_clause_broken_on_a_degenerate_branch_costs_exactly_its_edge_cells_point(tmp_path):
    from fixture_course import grade_class, make_exercises_course, release_path

    root = tmp_path / "course"
    assignment = make_exercises_course(root, _exercises(), contracts=CONTRACTS)
    rows, out = grade_class(root, {student: submissions.filled_in(assignment, answers, release_path=release_path(root))
                                   for student, (answers, _) in STUDENTS.items()})
    for student, (_, score) in STUDENTS.items():
        row = rows[student]
        assert (row.score, row.max_score, row.status) == (score, 12, "ok"), (student, row.score, row.status, row.detail)
    for student, message in MESSAGES.items():
        page = (out / "feedback" / student / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
        assert message in page.replace("&#x27;", "'"), (student, message)
