"""A mistake is charged where it is made (issue 51): a notebook that is the solution except one exercise's
mistake loses that exercise's points and no other's, though later exercises call the wrong one.

Judged as the grader judges (``autograder.course.isolation``: ``judge_notebook`` with the grader's job, the
second pass included). Only mistakes in exercises that a later one uses can be charged to another, so only
those are tried: each one's first mutant (``mutants/NN_slug.toml``). Before the second pass, issue 51 counted 8 of
the course's 66 first mutants that cost more than their own exercise's points (07's first ``LayerNorm`` mutant cost
PreLNBlock its 6 points too). The slow test took about 100 CPU seconds for the six notebooks it does not skip.
"""

from __future__ import annotations

import json

import pytest

from autograder import selfgrade
from autograder.course import conventions, isolation, mutant_edits
from autograder.course.setup_cell import SETUP_GRADE_ID
from autograder.course.solution_source import load_solution
from autograder.judge.protocol import REFERENCE_NOTE
from autograder.selfgrade.saved_notebook import run_cells


def _first_mutant(assignment, nb, exercise: str) -> mutant_edits.Mutant:
    return mutant_edits.assignment_mutants(assignment, nb, {exercise})[exercise][0]


@pytest.mark.slow   # about 8 CPU s: the quick subset stays about a minute
def test_a_wrong_layer_norm_costs_only_the_layer_norm_s_points():
    """The issue's case: the blocks are right but use the student's LayerNorm; they are graded with the course's."""
    assignment = conventions.assignment("07_block")
    nb = load_solution(assignment)
    mutant = _first_mutant(assignment, nb, "LayerNorm")
    lost, result = isolation.judged_with(nb, {"LayerNorm": mutant.code})
    assert lost == {"LayerNorm": 4.0}, f"{mutant.name}: {lost}"
    shown = {conventions.grade_id(nb.cells[c.index]): json.dumps(c.outputs) for c in result.cells}
    blocks = [grade_id for grade_id in shown if grade_id and grade_id.startswith(("test_PreLNBlock", "test_PostLNBlock"))]
    noted = [g for g in blocks if REFERENCE_NOTE + "LayerNorm, since yours lost points in test_LayerNorm" in shown[g]]
    assert len(blocks) == 6 and "test_PreLNBlock" in noted, {g: shown[g] for g in blocks}   # the others pass as they are
    course = isolation.judge_job(nb, {}).references["LayerNorm"]   # the course's LayerNorm never reaches a page
    assert "def forward" in course and course not in json.dumps(result.to_dict())


@pytest.mark.slow
def test_each_mistake_costs_only_its_own_exercise_s_points(assignment):
    nb = load_solution(assignment)
    upstream = isolation.upstream_exercises(nb)
    if not upstream:
        pytest.skip("no exercise of this notebook uses another: none can be charged for another's mistake")
    charged = {}
    for exercise in upstream:
        mutant = _first_mutant(assignment, nb, exercise)
        lost, _ = isolation.judged_with(nb, {exercise: mutant.code})
        if set(lost) != {exercise}:
            charged[mutant.name] = lost
    assert not charged, f"mistakes charged to other exercises (points lost by exercise): {charged}"


@pytest.mark.slow
@pytest.mark.skipif(not selfgrade.available_assignments(), reason="private edition: no self-grading bundles")
def test_self_grading_charges_the_layer_norm_s_mistake_as_the_grader_does():
    """The public edition's self-grading (its bundle, the answers run afresh as the self-grading cell runs them) gives
    the points the grader's judge gives."""
    assignment = conventions.assignment("07_block")
    nb = load_solution(assignment)
    mutant = _first_mutant(assignment, nb, "LayerNorm")
    cells = [(number, conventions.strip_solution_markers(cell.source)) for number, cell in enumerate(nb.cells, 1)
             if conventions.is_solution_cell(cell) or conventions.grade_id(cell) == SETUP_GRADE_ID]
    cells = [(n, mutant.code if source == mutant_edits.solution_cells(nb)["LayerNorm"] else source) for n, source in cells]
    namespace, failures, _ = run_cells(cells)
    assert not failures
    verdicts = selfgrade.run_tests(selfgrade.read_bundle(assignment.name), namespace)
    lost: dict[str, float] = {}
    for verdict in verdicts:
        if not verdict.passed:
            lost[verdict.exercise] = lost.get(verdict.exercise, 0.0) + verdict.points
    assert lost == isolation.judged_with(nb, {"LayerNorm": mutant.code})[0] == {"LayerNorm": 4.0}
    assert any(REFERENCE_NOTE in v.message for v in verdicts if v.exercise == "PreLNBlock")
