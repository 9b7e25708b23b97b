"""One mistake charged once, through the whole grader (issue 51): notebook 07 with a wrong ``LayerNorm`` and right
blocks that use it, graded by ``grade`` (nbgrader, the sandbox, the judge's second pass, the gradebook, the feedback
page). It loses LayerNorm's 4 points only, and the page says which tests were graded with the course's LayerNorm."""

from __future__ import annotations

import pytest

from autograder.batch.grading import grade
from autograder.course import conventions, mutant_edits, submissions
from autograder.course.solution_source import load_solution
from autograder.sandbox.limits import Limits
from conftest import TEST_SANDBOX

pytestmark = pytest.mark.slow


def test_a_wrong_layer_norm_costs_its_own_points_only_in_the_gradebook_and_on_the_page(tmp_path):
    assignment = conventions.assignment("07_block")
    mutant = mutant_edits.assignment_mutants(assignment, load_solution(assignment), {"LayerNorm"})["LayerNorm"][0]
    name = assignment.source_path.name
    submissions.write(submissions.filled_in(assignment, {"LayerNorm": mutant.code}),
                      tmp_path / "submitted" / "ann" / assignment.name / name)
    rows = grade(tmp_path / "submitted", tmp_path / "out", progress=False, limits=Limits(sandbox=TEST_SANDBOX),
                 assignments={assignment.name})
    (row,) = rows
    assert (row.status, row.score, row.max_score) == ("ok", row.max_score - 4, 18), row.detail
    page = (tmp_path / "out" / "feedback" / "ann" / assignment.name / name.replace(".ipynb", ".html")).read_text()
    note = "since yours lost points in test_LayerNorm: your PreLNBlock passes this test with it."
    assert page.count(note) == 3, "PreLNBlock's visible test and its two hidden tests, each with the judge's note"
