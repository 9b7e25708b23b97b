"""The grade and the visible test agree: each visible test cell, run on each mutant, in a kernel and in the judge.

A student sees a visible test pass or fail in their own kernel; the grade is decided in the judge. For the
two to mean the same, every visible test cell must give the same verdict both ways on the same answer,
including a wrong one (a value of the wrong type that the transport turned into the right one, a device
lost on the way, a test that reads a notebook variable would each make them differ). The judge's verdicts
are those of ``check.run_notebook``'s judge run (which judges every test cell of an exercise on the
solution and on each mutant); this runs, for one assignment, the set-up and solution cells in a kernel
(nbclient) and at each exercise swaps in each of its mutants and runs the exercise's *visible* test cell
there. Only visible cells, and no demo cells, so the cost is one notebook's answer cells plus one visible
cell per mutant (``tests/course/test_visible_agrees_with_grade.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import nbformat
from nbclient import NotebookClient

from . import conventions, mutant_edits
from .check import NotebookReport, _error_of
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
    """The judge's verdicts from a judge run (``check.run_notebook``): on the solution, and on each mutant."""

    def __init__(self, nb, judged: NotebookReport):
        self.solution = {conventions.grade_id(nb.cells[index]): error for index, error in judged.judge_errors.items()}
        self.mutants = {m.name: m for m in judged.mutants}

    def verdict(self, grade_id: str, mutant: str = "") -> str | None:
        if not mutant:
            return self.solution.get(grade_id)
        judged = self.mutants.get(mutant)
        if judged is None:
            raise KeyError(f"the judge run has no verdict on mutant {mutant} (run it with its mutants)")
        return judged.errors.get(grade_id)     # none when the mutant's own cell raised (reported by check)


def visible_verdicts(assignment: conventions.Assignment, judged: NotebookReport) -> list[VisibleVerdict]:
    """Each exercise's visible test on the solution and on each mutant, in a kernel, beside the judge's verdicts
    in ``judged`` (``check.run_notebook(assignment)``, the judge run with mutants)."""
    nb = load_solution(assignment)
    mutants = mutant_edits.assignment_mutants(assignment, nb)
    kernel = _KernelSide(assignment)
    with kernel.client.setup_kernel():
        return _walk(nb, mutants, kernel, _JudgeSide(nb, judged))


def _walk(nb, mutants: dict, kernel: _KernelSide, judge: _JudgeSide) -> list[VisibleVerdict]:
    """Run the answer cells in order in the kernel; at each visible test cell, run it on every mutant."""
    by_visible = {e.visible_index: e for e in conventions.exercises(nb) if e.visible_index is not None}
    verdicts: list[VisibleVerdict] = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if conventions.grade_id(cell) == SETUP_GRADE_ID or conventions.is_solution_cell(cell):
            kernel.run(conventions.strip_solution_markers(cell.source))
        elif index in by_visible:
            verdicts += _visible_cell(nb, by_visible[index], mutants.get(by_visible[index].name, []), kernel, judge)
    return verdicts


def _visible_cell(nb, exercise, mutants: list[mutant_edits.Mutant], kernel: _KernelSide,
                  judge: _JudgeSide) -> list[VisibleVerdict]:
    cell = nb.cells[exercise.visible_index]
    grade_id = conventions.grade_id(cell)
    solution = conventions.strip_solution_markers(nb.cells[exercise.solution_index].source)
    verdicts = [VisibleVerdict(exercise.name, "", kernel.run(cell.source), judge.verdict(grade_id))]
    for mutant in mutants:
        kernel.run(mutant.code)
        verdicts.append(VisibleVerdict(exercise.name, mutant.name, kernel.run(cell.source),
                                       judge.verdict(grade_id, mutant.name)))
        kernel.run(solution)
    return verdicts
