"""Through the real nbgrader pipeline: the solution gets full marks, the untouched student copy 0.

Every selected assignment's filled-in solution (student ``solution``) and untouched student copy (student
``untouched``) are graded in one run of the grader, as a class is (issue 35: twelve runs of two notebooks
each paid the grader's start, about 10 s, for about 3 s of grading); each test reads its assignment's rows.
"""

from __future__ import annotations

import shutil

import pytest

from autograder.course import submissions
from autograder.batch.grading import grade
from autograder.sandbox.limits import Limits
from conftest import ASSIGNMENTS, TEST_SANDBOX, WALL_CELL_TIMEOUT_S, WALL_NOTEBOOK_TIMEOUT_S

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graded(request, tmp_path_factory):
    """(rows by (student, assignment), the grader's output folder) for the assignments this run selected."""
    selected = {item.callspec.params["assignment"].name for item in request.session.items
                if item.module is request.module and hasattr(item, "callspec")}
    root = tmp_path_factory.mktemp("pipeline")
    subs = root / "submitted"
    for assignment in (a for a in ASSIGNMENTS if a.name in selected):
        name = assignment.source_path.name
        submissions.write(submissions.filled_in(assignment), subs / "solution" / assignment.name / name)
        (subs / "untouched" / assignment.name).mkdir(parents=True)
        shutil.copyfile(assignment.release_path, subs / "untouched" / assignment.name / name)
    limits = Limits(cell_timeout_s=WALL_CELL_TIMEOUT_S, notebook_timeout_s=WALL_NOTEBOOK_TIMEOUT_S, sandbox=TEST_SANDBOX)
    rows = grade(subs, root / "out", workers=2, progress=False, limits=limits)
    return {(r.student_id, r.assignment): r for r in rows}, root / "out"


def test_solution_full_marks_and_stub_zero(assignment, graded):
    rows, out = graded
    solution, untouched = rows[("solution", assignment.name)], rows[("untouched", assignment.name)]
    assert solution.status == "ok", f"solution graded with status {solution.status}: {solution.detail}"
    assert solution.score == solution.max_score > 0, (
        f"the solution scored {solution.score}/{solution.max_score}; see {out}/feedback/solution")
    assert untouched.status == "ok"
    assert untouched.score == 0, f"the untouched student copy scored {untouched.score}"

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission_notebook(assignment.notebook_name, assignment.name, "untouched")
        nonzero = [g.name for g in submission.grades if g.auto_score != 0]
        assert not nonzero, f"graded cells of the untouched copy that scored above 0: {nonzero}"
        assert (out / "feedback" / "solution" / assignment.name / f"{assignment.notebook_name}.html").exists()
