"""One mistake is charged once: a solution notebook judged with some answers replaced, and the points each
exercise loses (``tests/course/test_charged_once.py``; issue 51).

The notebook goes through ``judge.notebook.judge_notebook``, the grader's own judge, with the job the grader
would build for a student who wrote the solution except the replaced answers: the set-up and answer cells run
in a runner (demo cells are not re-run), every graded test cell in the judge, and the second pass
(``judge.second_pass``) with the course's code for each earlier part that lost points. Points are scored as
nbgrader scores a judged cell: all of its points, unless its outputs hold an error.
"""

from __future__ import annotations

import json

from ..judge.notebook import judge_notebook
from ..judge.protocol import JudgeJob, JudgeResult
from ..judge.second_pass import failed
from ..sandbox.limits import Limits
from . import conventions
from .setup_cell import SETUP_GRADE_ID

# As ``check`` judges a notebook: no sandbox (the code is the course's), generous limits.
LIMITS = Limits(cell_timeout_s=300, notebook_timeout_s=3600, memory_mb=8192, sandbox="none")


def judge_job(nb, answers: dict[str, str], limits: Limits = LIMITS, declared: dict | None = None) -> JudgeJob:
    """The grader's job for the solution notebook ``nb`` with the answer cells named in ``answers`` (exercise ->
    code) replaced, the others answered by the solution; ``declared``: the contracts (``contracts.for_judge``)."""
    cells, run_indices, answer_cells, labels = [], [], [], {}
    for index, cell in enumerate(nb.cells):
        source = cell.source
        if conventions.grade_id(cell) == SETUP_GRADE_ID and not conventions.is_graded_cell(cell):
            run_indices.append(index)
        elif conventions.is_solution_cell(cell):
            name = conventions.grade_id(cell)
            source = answers.get(name, conventions.strip_solution_markers(source))
            run_indices.append(index)
            answer_cells.append(index)
            labels[str(index)] = f"your answer cell '{name}'"
        cells.append({"cell_type": cell.cell_type, "source": source, "metadata": dict(cell.metadata)})
    references, upstream, exercise_of = conventions.reference_answers(nb)
    job = JudgeJob(cells, run_indices, answer_cells, labels, conventions.exercise_names(nb), limits,
                   references=references, upstream=upstream, exercise_of=exercise_of, contracts=declared or {})
    return JudgeJob.from_dict(json.loads(json.dumps(job.to_dict())))   # plain JSON, as a job reaches a judge


def points_lost(nb, result: JudgeResult) -> dict[str, float]:
    """The points each exercise lost in ``result`` (only exercises that lost some)."""
    outputs = {cell.index: cell.outputs for cell in result.cells}
    lost: dict[str, float] = {}
    for exercise in conventions.exercises(nb):
        for index in exercise.test_indices:
            if failed(outputs.get(index, [])):
                points = float(conventions.nbgrader_meta(nb.cells[index]).get("points", 0))
                lost[exercise.name] = lost.get(exercise.name, 0.0) + points
    return lost


def judged_with(nb, answers: dict[str, str], declared: dict | None = None) -> tuple[dict[str, float], JudgeResult]:
    """The points each exercise loses when ``answers`` replace the solution's, and the judge's result."""
    result = judge_notebook(judge_job(nb, answers, declared=declared))
    return points_lost(nb, result), result


def upstream_exercises(nb) -> list[str]:
    """The exercises a later exercise uses, in notebook order: the only ones whose mistakes could be charged to
    another (an exercise nothing uses can cost no other its points)."""
    used = {name for names in conventions.exercise_dependencies(nb).values() for name in names}
    return [e.name for e in conventions.exercises(nb) if e.name in used]
