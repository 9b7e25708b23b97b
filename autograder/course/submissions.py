"""Make submissions the way a student would: from the student version, with answers filled in.

Used by the demo (sample submissions) and by the tests (the solution as a submission, mutants).
Nothing here stores an answer: the correct code is read from ``solutions/`` at run time.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat

from . import conventions
from .solution_source import load_solution


def filled_in(assignment: conventions.Assignment, answers: dict[str, str] | None = None,
              release_path: Path | None = None):
    """The student version with every exercise answered.

    An exercise named in ``answers`` gets that code; every other exercise gets the solution's code
    (without the solution markers).
    """
    answers = dict(answers or {})
    source = load_solution(assignment)
    solutions = {conventions.grade_id(c): conventions.strip_solution_markers(c.source)
                 for c in source.cells if conventions.is_solution_cell(c)}
    unknown = set(answers) - set(solutions)
    if unknown:
        raise KeyError(f"{assignment.name} has no exercise(s) {sorted(unknown)}; it has {sorted(solutions)}")
    nb = copy.deepcopy(conventions.read_notebook(release_path or assignment.release_path))
    for cell in nb.cells:
        gid = conventions.grade_id(cell)
        if conventions.is_solution_cell(cell) and gid in solutions:
            cell.source = answers.get(gid, solutions[gid])
    return nb


def write(nb, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path
