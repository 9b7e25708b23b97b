"""Through the real nbgrader pipeline: the solution gets full marks, the untouched student copy 0.

One batch grades both for every assignment (a class with every notebook of the course), as an instructor's
`grade` would: one gradebook, one judges' server, instead of a batch per notebook (``pipeline`` in
tests/conftest.py; test_selfgrade.py reads notebook 01's rows of the same batch).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_solution_full_marks_and_stub_zero(assignment, pipeline):
    rows, out = pipeline
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
