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
the ids, the string.

The same on a real notebook, 01: an answer whose functions return, print, raise and keep their
arguments is graded, and its page searched for every value the hidden tests send, recorded in the judge
(``hidden_values.HiddenInputs``) while the solution notebook runs through it in this process."""

from __future__ import annotations

import re

import pytest
import torch
from nbformat.v4 import new_code_cell

from autograder.batch.grading import grade
from autograder.course import conventions, submissions
from autograder.course.check import judge_mutants
from autograder.course.solution_source import load_solution
from autograder.judge import hidden_values
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
    assert "double of a random (3, 5) tensor: 15 of 15 values differ (largest difference" in pages["triples"]
    assert "First mismatch at index (0, 0)" in pages["triples"]
    assert "your double raised ValueError (line 2 in double); a hidden test does not show its message" in \
        pages["raises_its_input"]
    assert "double of the ids […, …, …" in pages["triples"], "the test's own words lose only the inputs"
    # An answer returning its input itself is told so (issue 49), by the argument's name, never its values.
    assert "double returned the caller's own `x` as its result" in pages["identity"]
    assert "modified its argument `x` in place (its length changed from 12 to 13)" in pages["modifies_its_list"]


KEEP = "SEEN = globals().setdefault('SEEN', [])\n"
# Notebook 01's answers that try every route: return the input (as a result or as the first value of a
# scalar), print it, raise it, keep it for the last cell. The model, train and generate keep the solution.
ECHOES = {
    "log_softmax": KEEP + "def log_softmax(logits):\n    SEEN.append(logits)\n    print(logits)\n    return logits\n",
    "cross_entropy": KEEP + "def cross_entropy(logits, targets):\n    raise ValueError(f'{logits} {targets}')\n",
    "perplexity": KEEP + "def perplexity(log_probs):\n    SEEN.append(log_probs)\n    return log_probs.reshape(-1)[0]\n",
    "bigram_counts": KEEP + "def bigram_counts(ids, vocab_size):\n    SEEN.append(ids)\n    return ids\n",
    "bigram_log_probs": KEEP + "def bigram_log_probs(counts, alpha):\n    SEEN.append(counts)\n    return counts.double()\n",
    "softmax_with_temperature": KEEP + "def softmax_with_temperature(logits, temperature):\n    SEEN.append(logits)\n"
                                       "    raise RuntimeError(repr(logits.tolist()))\n",
}


def _sent_by_hidden_tests(assignment) -> list:
    """Every argument notebook ``assignment``'s hidden tests send, recorded in the judge while the solution
    notebook runs through it (``check``'s harness: this process, no sandbox)."""
    sent = []
    record = hidden_values.HiddenInputs.add_arguments
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hidden_values.HiddenInputs, "add_arguments",
                      lambda self, arguments: (sent.append(arguments), record(self, arguments))[1])
        judge_mutants(load_solution(assignment), {}, cell_timeout_s=120)
    return sent


def _printed_forms(sent: list) -> set[str]:
    """How those arguments read when printed: each float tensor's first 4 values that are not round numbers
    (nor below 0.01), at 4 decimals (PyTorch) and 6 significant digits (the checks' previews); 4 ids in a
    row with 8 digits."""
    found = set()
    for arguments in sent:
        for value in arguments.values() if isinstance(arguments, dict) else arguments:
            if not isinstance(value, torch.Tensor) or value.dtype == torch.bool or value.numel() < 4:
                continue
            flat = value.detach().reshape(-1)[:64].double().tolist()
            if value.is_floating_point():
                rough = [v for v in flat if 0.01 <= abs(v) < 1e6 and round(v, 2) != round(v, 4)][:4]
                found |= {f"{v:.4f}" for v in rough} | {f"{v:.6g}" for v in rough}
            else:
                runs = [", ".join(str(int(v)) for v in flat[i:i + 4]) for i in range(len(flat) - 3)]
                found |= {run for run in runs if sum(c.isdigit() for c in run) >= 8}
    return found


def test_a_real_notebooks_hidden_inputs_stay_off_the_page(tmp_path):
    """A printed form that the page of the solution shows too (the release's text, a visible test's output such
    as ``ln 3 = 1.0986``) is no secret; every other one on the echoing answer's page would be a leak."""
    assignment = next(a for a in conventions.assignments() if a.name == "01_next_token")
    forms = _printed_forms(_sent_by_hidden_tests(assignment))
    echoes = submissions.filled_in(assignment, ECHOES)
    echoes.cells += [new_code_cell("print(SEEN)"), new_code_cell("raise RuntimeError(repr(SEEN))")]
    for student, nb in (("echo", echoes), ("solution", submissions.filled_in(assignment))):
        submissions.write(nb, tmp_path / "submitted" / student / assignment.name / assignment.source_path.name)
    rows = {row.student_id: row for row in grade(
        tmp_path / "submitted", tmp_path / "out", workers=2, progress=False,
        limits=Limits(cell_timeout_s=120, notebook_timeout_s=900, sandbox=TEST_SANDBOX))}
    page, control = ((tmp_path / "out" / "feedback" / student / assignment.name /
                      assignment.source_path.with_suffix(".html").name).read_text(encoding="utf-8")
                     for student in ("echo", "solution"))
    assert rows["echo"].status == "ok" and page.count("Hidden tests failed") >= 6, rows["echo"].detail
    assert rows["solution"].score == rows["solution"].max_score, rows["solution"].detail
    forms = {form for form in forms if form not in control}
    assert len(forms) > 100, "the search must have something to look for"
    shown = sorted(form for form in forms if form in page)
    print(f"{assignment.name}: {len(forms)} printed forms of the hidden tests' inputs searched, {len(shown)} on the page")
    assert not shown, f"the page shows hidden inputs {shown[:10]}: " + re.sub(
        r"\s+", " ", page[max(0, page.find(shown[0]) - 300):page.find(shown[0]) + 80])
