"""The grade and the visible test agree: each visible test cell, run on each mutant, in a kernel and in the judge.

A student sees a visible test pass or fail in their own kernel; the grade is decided in the judge. For the
two to mean the same, every visible test cell must give the same verdict both ways on the same answer,
including a wrong one (a value of the wrong type that the transport turned into the right one, a device
lost on the way, a test that reads a notebook variable would each make them differ). This runs, for one
assignment, the set-up and solution cells once in a kernel (nbclient) and once in the runner of a judge
``Session``, and at each exercise swaps in each of its mutants and runs the exercise's *visible* test cell
both ways. Only visible cells, and no demo cells, so the cost is one notebook's answer cells plus one
visible cell per mutant on each side (``tests/course/test_visible_agrees_with_grade.py``).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from . import conventions, mutant_edits
from .check import _error_of
from ..judge.session import Session
from ..sandbox.limits import Limits
from .setup_cell import SETUP_GRADE_ID
from .solution_source import load_solution


@dataclass
class VisibleVerdict:
    exercise: str
    mutant: str            # the mutant's name (<exercise>__<mistake>), or "" for the solution itself
    kernel_error: str | None
    judge_error: str | None

    @property
    def agree(self) -> bool:
        return (self.kernel_error is None) == (self.judge_error is None)


class _KernelSide:
    """A kernel (nbclient) that runs the notebook's answer cells and, on demand, any source."""

    def __init__(self, assignment: conventions.Assignment):
        os.environ.setdefault("COURSE_OFFLINE", "1")
        os.environ.setdefault("MPLBACKEND", "agg")
        scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("")])
        self.client = NotebookClient(scratch, timeout=600, kernel_name="python3",
                                     allow_errors=True, resources={"metadata": {"path": str(assignment.source_path.parent)}})

    def run(self, source: str) -> str | None:
        cell = nbformat.v4.new_code_cell(source)
        self.client.execute_cell(cell, 0)
        return _error_of(cell.get("outputs", []))


class _JudgeSide:
    """A judge ``Session``: answer cells in its runner, test cells in the judge with handles."""

    def __init__(self, session: Session):
        self.session = session

    def run(self, source: str) -> str | None:
        return _error_of(self.session.run_cell(source, keep=False).outputs)

    def keep(self, source: str) -> str | None:
        return _error_of(self.session.run_cell(source).outputs)

    def test(self, source: str, grade_id: str) -> str | None:
        return _error_of(self.session.run_test_cell(source, grade_id).outputs)


def visible_verdicts(assignment: conventions.Assignment) -> list[VisibleVerdict]:
    """Each exercise's visible test on the solution and on each mutant, judged in a kernel and in the judge."""
    nb = load_solution(assignment)
    mutants = mutant_edits.assignment_mutants(assignment, nb)
    limits = Limits(cell_timeout_s=300, notebook_timeout_s=3600, memory_mb=8192, sandbox="none")
    kernel = _KernelSide(assignment)
    with tempfile.TemporaryDirectory(prefix="course-agreement-") as tmp, kernel.client.setup_kernel():
        scratch = Path(tmp) / "work"
        scratch.mkdir()
        session = Session(scratch, limits, [], conventions.exercise_names(nb), Path(tmp) / "runner.log")
        session.start()
        try:
            return _walk(nb, mutants, kernel, _JudgeSide(session))
        finally:
            session.stop()


def _walk(nb, mutants: dict, kernel: _KernelSide, judge: _JudgeSide) -> list[VisibleVerdict]:
    """Run the answer cells in order on both sides; at each visible test cell, judge it on every mutant."""
    by_visible = {e.visible_index: e for e in conventions.exercises(nb) if e.visible_index is not None}
    verdicts: list[VisibleVerdict] = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if conventions.grade_id(cell) == SETUP_GRADE_ID or conventions.is_solution_cell(cell):
            source = conventions.strip_solution_markers(cell.source)
            kernel.run(source)
            judge.keep(source)
        elif index in by_visible:
            verdicts += _visible_cell(nb, by_visible[index], mutants.get(by_visible[index].name, []), kernel, judge)
    return verdicts


def _visible_cell(nb, exercise, mutants: list[mutant_edits.Mutant], kernel: _KernelSide,
                  judge: _JudgeSide) -> list[VisibleVerdict]:
    cell = nb.cells[exercise.visible_index]
    solution = conventions.strip_solution_markers(nb.cells[exercise.solution_index].source)
    verdicts = [VisibleVerdict(exercise.name, "", kernel.run(cell.source),
                               judge.test(cell.source, conventions.grade_id(cell)))]
    for mutant in mutants:
        kernel.run(mutant.code)
        judge.run(mutant.code)
        verdicts.append(VisibleVerdict(exercise.name, mutant.name, kernel.run(cell.source),
                                       judge.test(cell.source, conventions.grade_id(cell))))
        kernel.run(solution)
        judge.run(solution)
    return verdicts
