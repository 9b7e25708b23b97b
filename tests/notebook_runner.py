"""Run a solution notebook once, trying every mutant at its exercise on the way.

One kernel per notebook: cells run top to bottom; when the first test cell of an exercise is
reached (its solution cell has already run), each mutant of that exercise is executed in its place
and the exercise's test cells (visible and hidden) are run against it; then the real solution cell is
run again and the notebook carries on. So a single pass gives (1) whether every cell of the solution
passes, (2) which mutants are caught, and (3) the solution's own run time (mutant runs excluded).
"""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from nbclient import NotebookClient

from autograder import conventions


@dataclass
class MutantResult:
    exercise: str
    path: Path
    description: str
    failed_cells: list[str]       # grade_ids of the test cells that failed
    setup_error: str = ""         # the mutant's own cell raised (a broken mutant file)

    @property
    def caught(self) -> bool:
        return bool(self.failed_cells) and not self.setup_error


@dataclass
class NotebookReport:
    assignment: str
    seconds: float
    budget_seconds: float
    cell_errors: dict[int, str] = field(default_factory=dict)  # index -> "grade_id: ename: evalue"
    mutants: list[MutantResult] = field(default_factory=list)


def _error_of(cell) -> str | None:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output.get('ename')}: {output.get('evalue', '')[:400]}"
    return None


def run_notebook(assignment: conventions.Assignment, *, with_mutants: bool = True,
                 cell_timeout: int = 600) -> NotebookReport:
    nb = conventions.read_notebook(assignment.source_path)
    exercises = conventions.exercises(nb)
    by_first_test = {min(e.test_indices): e for e in exercises if e.test_indices}
    mutants = conventions.mutant_files(assignment) if with_mutants else {}
    report = NotebookReport(assignment.name, 0.0, conventions.cpu_budget_seconds(nb))

    os.environ.setdefault("COURSE_OFFLINE", "1")
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    client = NotebookClient(nb, timeout=cell_timeout, kernel_name="python3", allow_errors=True,
                            interrupt_on_timeout=True,
                            resources={"metadata": {"path": str(assignment.source_path.parent)}})
    # nbclient stores every executed cell back into nb.cells[index], so mutant runs would overwrite the
    # notebook's own cells: always execute fresh copies of the pristine cells.
    pristine = copy.deepcopy(nb.cells)
    with client.setup_kernel():
        for index, original in enumerate(pristine):
            if original.cell_type != "code":
                continue
            cell = copy.deepcopy(original)
            exercise = by_first_test.get(index)
            if exercise is not None:
                for path in mutants.get(exercise.name, []):
                    report.mutants.append(_try_mutant(client, pristine, exercise, path))
                if mutants.get(exercise.name):
                    restore = copy.deepcopy(pristine[exercise.solution_index])
                    client.execute_cell(restore, exercise.solution_index)
            start = time.perf_counter()
            client.execute_cell(cell, index)
            report.seconds += time.perf_counter() - start
            error = _error_of(cell)
            if error:
                report.cell_errors[index] = f"cell {index} ({conventions.grade_id(cell) or 'no grade_id'}): {error}"
    return report


def _try_mutant(client, cells, exercise: conventions.Exercise, path: Path) -> MutantResult:
    result = MutantResult(exercise.name, path, conventions.mutant_description(path), [])
    mutant_cell = copy.deepcopy(cells[exercise.solution_index])
    mutant_cell.source = path.read_text(encoding="utf-8")
    mutant_cell.outputs = []
    client.execute_cell(mutant_cell, exercise.solution_index)
    error = _error_of(mutant_cell)
    if error:
        result.setup_error = error
        return result
    for test_index in exercise.test_indices:
        test_cell = copy.deepcopy(cells[test_index])
        test_cell.outputs = []
        client.execute_cell(test_cell, test_index)
        if _error_of(test_cell):
            result.failed_cells.append(conventions.grade_id(test_cell))
    return result
