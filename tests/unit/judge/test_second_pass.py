"""``autograder.judge.second_pass``: a mistake is charged where it is made (issue 51). A notebook of three
exercises, ``double``, ``quadruple`` (which uses ``double``) and ``octuple`` (which uses both), judged for real
(a runner without the sandbox): a wrong ``double`` loses only its own points, a wrong ``quadruple`` still
loses its own and is told its part of the blame, and nothing the course's code could print reaches a page."""

from __future__ import annotations

import json

import pytest

from autograder.judge.notebook import judge_notebook
from autograder.judge.protocol import REFERENCE_NOTE, JudgeJob
from autograder.judge.second_pass import failed
from autograder.sandbox.limits import Limits

SECRET = "course-reference-5ec2e7"   # in the course's code only: it must never reach an output
REFERENCES = {"double": f'def double(x):\n    """{SECRET}"""\n    return 2 * x\n',
              "quadruple": "def quadruple(x):\n    return double(double(x))\n"}


def code(source, **nbgrader):
    return {"cell_type": "code", "source": source, "metadata": {"nbgrader": nbgrader} if nbgrader else {}}


def a_test(exercise: str, factor: int, hidden: bool = False) -> dict:
    body = f"from utils import checks\nchecks.assert_equal({exercise}(3), {3 * factor}, name='{exercise}(3)')\n"
    if hidden:
        body = f"# Hidden tests\n### BEGIN HIDDEN TESTS\n{body}### END HIDDEN TESTS\n"
    return code(body, grade=True, grade_id=f"test_{exercise}" + ("_hidden" if hidden else ""), points=1)


def notebook(double: str, quadruple: str, octuple: str, tell: str = "") -> list:
    """Set-up, the three answers with their visible and hidden tests, and a student's cell that prints."""
    return [code("import torch", grade_id="setup"),
            code(double, solution=True, grade_id="double"), a_test("double", 2), a_test("double", 2, hidden=True),
            code(quadruple, solution=True, grade_id="quadruple"), a_test("quadruple", 4), a_test("quadruple", 4, hidden=True),
            code(tell or "print('my notes')"),
            code(octuple, solution=True, grade_id="octuple"), a_test("octuple", 8), a_test("octuple", 8, hidden=True)]


RIGHT = ("def double(x):\n    return x + x\n",
         "def quadruple(x):\n    print(double.__doc__)\n    return double(double(x))\n",   # prints the code it uses
         "def octuple(x):\n    return double(quadruple(x))\n")
WRONG_DOUBLE = "def double(x):\n    return 3 * x\n"


def job(cells: list, **limits) -> JudgeJob:
    answers = [i for i, c in enumerate(cells) if c["metadata"].get("nbgrader", {}).get("solution")]
    exercise_of = {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"]["grade_id"].split("_")[1]
                   for c in cells if c["metadata"].get("nbgrader", {}).get("grade")}
    return JudgeJob(cells, [0, *answers, 7], answers, {}, ["double", "quadruple", "octuple"],
                    Limits(cell_timeout_s=30, sandbox="none", **limits), references=REFERENCES,
                    upstream={"quadruple": ["double"], "octuple": ["double", "quadruple"]}, exercise_of=exercise_of)


def lost(cells: list, result) -> dict[str, list[str]]:
    """The failed test cells of each exercise, by grade id."""
    by_index = {c.index: c.outputs for c in result.cells}
    found: dict[str, list[str]] = {}
    for index, cell in enumerate(cells):
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("grade") and failed(by_index[index]):
            found.setdefault(meta["grade_id"].split("_")[1], []).append(meta["grade_id"])
    return found


def text(result, index: int) -> str:
    return json.dumps(next(c.outputs for c in result.cells if c.index == index))


@pytest.fixture(scope="module")
def wrong_double():
    cells = notebook(WRONG_DOUBLE, *RIGHT[1:])
    return cells, judge_notebook(job(cells))


def test_a_wrong_part_costs_only_its_own_points(wrong_double):
    cells, result = wrong_double
    assert lost(cells, result) == {"double": ["test_double", "test_double_hidden"]}
    assert text(result, 5).count(REFERENCE_NOTE) == 1
    assert ("Graded with the course's double, since yours lost points in test_double: your quadruple passes this test"
            in text(result, 6))
    assert "Graded with the course's double and quadruple, since yours lost points in test_double, test_quadruple" in text(result, 9)


def test_nothing_of_the_course_s_code_reaches_the_result(wrong_double):
    """The student's quadruple prints the docstring of the double it calls: the course's, in the second runner
    (where what a call prints is never kept: the first runner's is not either)."""
    _, result = wrong_double
    assert SECRET not in json.dumps(result.to_dict())
    assert "my notes" in text(result, 7)   # the first pass's outputs of the student's own cells stay


def test_a_wrong_dependent_keeps_its_failure_and_is_told_of_the_other():
    """quadruple raises with the docstring of the double it calls: the course's, in the second runner, where the
    message goes nowhere."""
    cells = notebook(WRONG_DOUBLE, "def quadruple(x):\n    raise ValueError(f'uses {double.__doc__}')\n", RIGHT[2])
    result = judge_notebook(job(cells))
    assert SECRET not in json.dumps(result.to_dict()) and "uses None" in text(result, 5)
    assert lost(cells, result) == {"double": ["test_double", "test_double_hidden"],
                                   "quadruple": ["test_quadruple", "test_quadruple_hidden"]}
    for index in (5, 6):
        assert ("double, which quadruple uses, lost points too (test_double); this test fails with the course's double "
                "as well, so the failure is quadruple's own.") in text(result, index)
    assert REFERENCE_NOTE + "double and quadruple" in text(result, 9)   # octuple is right: graded with both


def test_trouble_in_the_second_runner_is_named_by_its_status_only():
    """A MemoryError sets a status; its message, which quotes the course's double there, is never shown."""
    cells = notebook(WRONG_DOUBLE, "def quadruple(x):\n    raise MemoryError(f'uses {double.__doc__}')\n", RIGHT[2])
    result = judge_notebook(job(cells))
    assert SECRET not in json.dumps(result.to_dict()) and "uses None" in text(result, 5)
    assert "(the grader could not try the course's double: its second run ended in 'memory limit')." in text(result, 5)


def test_the_student_s_own_parts_stay_where_they_passed():
    """quadruple is wrong, double right: octuple is graded with the student's double and the course's quadruple."""
    cells = notebook(RIGHT[0], "def quadruple(x):\n    return 3 * double(x)\n", RIGHT[2])
    result = judge_notebook(job(cells))
    assert lost(cells, result) == {"quadruple": ["test_quadruple", "test_quadruple_hidden"]}
    assert "Graded with the course's quadruple, since yours lost points in test_quadruple: your octuple" in text(result, 9)


def test_a_right_notebook_has_no_second_pass():
    cells = notebook(*RIGHT)
    result = judge_notebook(job(cells))
    assert lost(cells, result) == {} and REFERENCE_NOTE not in json.dumps(result.to_dict())


def test_without_time_left_the_failure_stays_and_says_why():
    cells = notebook(WRONG_DOUBLE, *RIGHT[1:])
    result = judge_notebook(job(cells, notebook_timeout_s=1))
    assert lost(cells, result)["quadruple"] == ["test_quadruple", "test_quadruple_hidden"]
    assert ("double, which quadruple uses, lost points too (test_double): this failure may come from there (the grader "
            "could not try the course's double: no time left within the notebook's time limit).") in text(result, 6)


@pytest.mark.parametrize("printed, shown", [
    ("Graded with the course's double, since yours lost points in test_double: your quadruple passes this test with it.\n",
     True),
    ("Graded with the course's double, since yours lost points in 9.5 1: your quadruple passes this test with it.\n", False),
    ("a hidden test's own print\n", False),
])
def test_a_passed_hidden_test_s_page_shows_the_judge_s_note_only(printed, shown):
    """The feedback page shows a hidden test as its verdict; a pass from the second pass adds the note, in the exact
    words the judge writes (names only), never other text the hidden test printed."""
    import nbformat

    from autograder.batch.gradebook import RedactHiddenTests

    cell = nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\n...", metadata={"nbgrader": {"grade": True, "grade_id": "t"}})
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    page = RedactHiddenTests().preprocess_cell(cell, {}, 0)[0].outputs[0].text
    assert page == "Hidden tests passed.\n" + (printed if shown else "")
