"""Issue 47, part 5: hidden inputs stay hidden. A red team found the first values of a hidden test's seeded
input in a student's feedback page. Feedback shows a hidden check's name, points, verdict and message, and
the message says what was checked in words, never the values of the test's inputs.

The fixture course gets three hidden test cells with seeded inputs (a random tensor, a list of random ids
named by the test's own words, a string named by repr), and a class whose answers try every route from
those inputs to the page: a result that is its input (identity), a mutant whose result shows it (times
three), code that raises its argument in its message or prints it during the call, code that keeps its
arguments and prints and raises them in a cell of its own after the hidden tests, code that modifies its
list argument in place. Every feedback page is then searched for the inputs as Python, NumPy and PyTorch
print them: the first values at PyTorch's 4 decimals and at the checks' 6 significant digits, runs of
the ids, the string."""

from __future__ import annotations

import re

import pytest
import torch
from nbformat.v4 import new_code_cell

from autograder.batch.grading import grade
from autograder.course import submissions
from autograder.sandbox.limits import Limits
from conftest import TEST_SANDBOX
from fixture_course import answer, make_course

pytestmark = pytest.mark.slow

INPUTS = '''g = torch.Generator().manual_seed(4747)
x = torch.randn(3, 5, generator=g)
ids = torch.randint(100, 1000, (12,), generator=g).tolist()
words = "quietly hidden words"
'''
HIDDEN_CELLS = tuple(f'''# Hidden tests for double run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks
{INPUTS}{check}
### END HIDDEN TESTS''' for check in (
    'checks.assert_close(double(x), 2 * x, name="double of a random (3, 5) tensor")',
    'checks.assert_equal(double(ids), ids * 2, name=f"double of the ids {ids}")',
    'checks.assert_equal(double(words), words * 2, name=f"double({words!r})")'))

KEEPS = "SEEN = []\n\ndef double(x):\n    SEEN.append(x)\n    return x\n"
STUDENTS = {
    "correct": "def double(x):\n    return 2 * x\n",
    "identity": "def double(x):\n    return x\n",
    "triples": "def double(x):\n    return 3 * x\n",
    "raises_its_input": "def double(x):\n    raise ValueError(f'cannot double {x!r}')\n",
    "prints_its_input": "def double(x):\n    print('doubling', x)\n    return x\n",
    "keeps_its_inputs": KEEPS,
    "modifies_its_list": "def double(x):\n    if isinstance(x, list):\n        x += [0]\n        return x\n    return x\n",
}
LATER_CELLS = {"keeps_its_inputs": ["print(SEEN)", "raise RuntimeError(repr(SEEN))"]}


def _inputs():
    namespace = {"torch": torch}
    exec(INPUTS, namespace)  # noqa: S102 - the hidden tests' own inputs, computed as they compute them
    return namespace["x"], namespace["ids"], namespace["words"]


def _telltales() -> set[str]:
    """How the hidden inputs would read on a page: each of the tensor's first values at 4 decimals (PyTorch)
    and 6 significant digits (the checks' previews), the ids three in a row (a list, a tensor), the string."""
    x, ids, words = _inputs()
    first = x.reshape(-1).tolist()[:6]
    found = {f"{v:.4f}" for v in first} | {f"{v:.6g}" for v in first}
    found |= {", ".join(map(str, ids[i:i + 3])) for i in range(len(ids) - 2)}
    found |= {" ".join(map(str, ids[i:i + 3])) for i in range(len(ids) - 2)}
    return found | {words, words.replace(" ", "&nbsp;")}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    assignment = make_course(root, hidden=HIDDEN_CELLS)
    for student, code in STUDENTS.items():
        nb = answer(assignment, root, code)
        nb.cells += [new_code_cell(source) for source in LATER_CELLS.get(student, [])]
        submissions.write(nb, root / "submitted" / student / "01_fixture" / "fixture.ipynb")
    rows = grade(root / "submitted", root / "out", workers=2, progress=False, solutions_dir=root / "solutions",
                 limits=Limits(cell_timeout_s=30, notebook_timeout_s=300, sandbox=TEST_SANDBOX))
    pages = {row.student_id: (root / "out" / "feedback" / row.student_id / "01_fixture" / "fixture.html").read_text(
        encoding="utf-8") for row in rows}
    return {row.student_id: row for row in rows}, pages


def test_the_answers_fail_their_hidden_tests_as_meant(graded):
    rows, pages = graded
    assert rows["correct"].score == rows["correct"].max_score == 7, rows["correct"].detail
    for student in set(STUDENTS) - {"correct"}:
        assert rows[student].status == "ok" and "Hidden tests failed" in pages[student], (student, rows[student].detail)


@pytest.mark.parametrize("student", sorted(STUDENTS))
def test_no_feedback_page_shows_a_hidden_input(graded, student):
    rows, pages = graded
    page = pages[student]
    shown = sorted(t for t in _telltales() if t in page)
    assert not shown, f"{student}'s feedback shows hidden inputs {shown}: " + "; ".join(
        re.sub(r"\s+", " ", page[max(0, page.find(t) - 200):page.find(t) + 60]) for t in shown[:2])
    assert not any(t in rows[student].detail for t in _telltales()), rows[student].detail


def test_a_hidden_test_still_says_what_was_checked(graded):
    """The messages stay useful: the check's name, and what differs, by how much, where."""
    _, pages = graded
    assert "double of a random (3, 5) tensor: 15 of 15 values differ (largest difference" in pages["identity"]
    assert "First mismatch at index (0, 0)" in pages["identity"]
    assert "your double raised ValueError (line 2 in double); a hidden test does not show its message" in \
        pages["raises_its_input"]
    assert "double of the ids […, …, …" in pages["identity"], "the test's own words lose only the inputs"
    assert "modified its argument `x` in place (its length changed from 12 to 13)" in pages["modifies_its_list"]
