"""Check a notebook of the course: ``python -m autograder check [ASSIGNMENT ...]``.

Runs each solution notebook twice, as a student sees it and as the grader judges it (with every mutant),
and prints its run time against its budget, the tests that failed and the mutants caught.
``benchmarks/notebook_times.py`` uses the same runs; the test suite uses the second (``in_kernel=False``)
beside its own run of the student version on a simulated Colab (``tests/conftest.py``), and the second's
verdicts on each mutant's visible test (``autograder.course.agreement``).

1. **In a kernel** (nbclient), top to bottom: every cell, demos and figures included, and every test
   cell run in the student's own kernel, must pass. This run's time is the notebook's CPU time.
2. **Through the judge** (``autograder.judge.Session``), the way grading works: the set-up and
   solution cells run in a runner process, every graded test cell runs in the judge with handles.
   Every test must pass there too (a test cell that leans on a notebook variable fails here with a
   ``NameError``). At each exercise, each of its mutants is swapped into the runner and the exercise's
   test cells are judged against it: at least one must fail. Then the solution is put back.
"""

from __future__ import annotations

import copy
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from nbclient import NotebookClient

from utils import claims

from . import contracts, conventions, mutant_edits
from ..sandbox import cpu_time
from ..judge.session import Session
from ..sandbox.limits import Limits
from .setup_cell import SETUP_GRADE_ID
from .solution_source import load_solution


# A kernel that uses no CPU (waiting on something that never comes) is stopped after this many times
# the cell's CPU limit in wall-clock seconds: far beyond what a busy machine stretches a cell to.
WALL_BACKSTOP = 6


@dataclass
class MutantResult:
    exercise: str
    name: str                     # <exercise>__<mistake>
    description: str
    failed_cells: list[str]       # grade_ids of the test cells that failed
    setup_error: str = ""         # the mutant's own cell raised (a broken mutant file)
    errors: dict[str, str] = field(default_factory=dict)   # grade_id of a failed test cell -> its error

    @property
    def caught(self) -> bool:
        return bool(self.failed_cells) and not self.setup_error


@dataclass
class NotebookReport:
    assignment: str
    seconds: float
    budget_seconds: float
    cell_errors: dict[int, str] = field(default_factory=dict)   # kernel run: index -> "grade_id: ename: evalue"
    judge_errors: dict[int, str] = field(default_factory=dict)  # judge run of the solution
    judge_seconds: float = 0.0
    mutants: list[MutantResult] = field(default_factory=list)
    heaviest_cell_seconds: float = 0.0   # kernel run: its longest cell, in CPU seconds


def _error_of(outputs) -> str | None:
    for output in outputs:
        if output.get("output_type") == "error":
            return f"{output.get('ename')}: {str(output.get('evalue', ''))[:400]}"
    return None


def run_notebook(assignment: conventions.Assignment, *, with_mutants: bool = True,
                 cell_cpu_limit_s: float = 600, in_kernel: bool = True) -> NotebookReport:
    """Both runs of one solution notebook. In the kernel run a cell is stopped after ``cell_cpu_limit_s`` CPU
    seconds (``cpu_time``), and after ``WALL_BACKSTOP`` times as many wall-clock seconds (a hung kernel).
    ``in_kernel=False``: the judge run only (its caller runs the notebook elsewhere and fills in the kernel
    run's fields: the test suite runs the student version once, alone on a simulated Colab)."""
    nb = load_solution(assignment)
    mutants = mutant_edits.assignment_mutants(assignment, nb) if with_mutants else {}   # a stale one stops here
    report = NotebookReport(assignment.name, 0.0, conventions.cpu_budget_seconds(nb))
    if in_kernel:
        _run_in_kernel(nb, assignment, report, cell_cpu_limit_s)
    _run_in_judge(nb, report, mutants, declared=contracts.for_judge(assignment))
    return report


def _run_in_kernel(nb, assignment, report: NotebookReport, cell_cpu_limit_s: float) -> None:
    os.environ.setdefault("COURSE_OFFLINE", "1")
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    client = NotebookClient(copy.deepcopy(nb), timeout=int(WALL_BACKSTOP * cell_cpu_limit_s), kernel_name="python3",
                            allow_errors=True, interrupt_on_timeout=True,
                            resources={"metadata": {"path": str(assignment.source_path.parent)}})
    # PyTorch on one thread, as in the grader's runners; the report's seconds are the kernel's CPU seconds.
    # A claim of the prose that does not hold (utils/claims.py) fails its cell, so the report names it.
    with client.setup_kernel(env={**cpu_time.one_thread_environment(), claims.STRICT: "1"}):
        clock = cpu_time.CellClock(getattr(client.km.provisioner, "pid", None), cell_cpu_limit_s)
        for index, original in enumerate(nb.cells):
            if original.cell_type != "code":
                continue
            cell = copy.deepcopy(original)  # nbclient writes executed cells back: keep the source pristine
            with clock.cell() as watch:
                client.execute_cell(cell, index)
            report.seconds += watch.seconds
            report.heaviest_cell_seconds = max(report.heaviest_cell_seconds, watch.seconds)
            error = _error_of(cell.get("outputs", []))
            if error:
                report.cell_errors[index] = f"cell {index} ({conventions.grade_id(cell) or 'no grade_id'}): {error}"


def _run_in_judge(nb, report: NotebookReport, mutants: dict[str, list[mutant_edits.Mutant]],
                  cell_timeout_s: float = 300, declared: dict | None = None) -> None:
    """The graded cells of ``nb`` judged as the grader judges them, each exercise's mutants first; ``declared``:
    what the contracts declare for every call (``contracts.for_judge``)."""
    exercises = conventions.exercises(nb)
    by_first_test = {min(e.test_indices): e for e in exercises if e.test_indices}
    limits = Limits(cell_timeout_s=cell_timeout_s, notebook_timeout_s=3600, memory_mb=8192, sandbox="none")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="course-harness-") as tmp:
        scratch = Path(tmp) / "work"
        scratch.mkdir()
        session = Session(scratch, limits, [], conventions.exercise_names(nb), Path(tmp) / "runner.log")
        session.declare_contracts(declared or {})
        session.start()
        try:
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                if conventions.is_graded_cell(cell):
                    exercise = by_first_test.get(index)
                    if exercise is not None and mutants.get(exercise.name):
                        for mutant in mutants[exercise.name]:
                            report.mutants.append(_try_mutant(session, nb, exercise, mutant))
                        session.run_cell(conventions.strip_solution_markers(nb.cells[exercise.solution_index].source),
                                         keep=False)
                    outcome = session.run_test_cell(cell.source, conventions.grade_id(cell))
                elif conventions.grade_id(cell) == SETUP_GRADE_ID or conventions.is_solution_cell(cell):
                    outcome = session.run_cell(conventions.strip_solution_markers(cell.source))
                else:
                    continue   # demo and figure cells are not run when grading
                error = _error_of(outcome.outputs)
                if error:
                    report.judge_errors[index] = f"cell {index} ({conventions.grade_id(cell) or 'no grade_id'}): {error}"
        finally:
            session.stop()
    report.judge_seconds = time.perf_counter() - start


def judge_mutants(nb, mutants: dict[str, list[mutant_edits.Mutant]], cell_timeout_s: float = 300,
                  declared: dict | None = None) -> list[MutantResult]:
    """The judge run of a solution notebook with the given mutants (by exercise) tried in place of the solutions:
    each mutant's result (the judge's errors on the solution itself are not reported here). A test cell that runs
    past ``cell_timeout_s`` fails (a mutant that loops for ever is caught by it)."""
    report = NotebookReport("", 0.0, 0.0)
    _run_in_judge(nb, report, mutants, cell_timeout_s, declared)
    return report.mutants


def _try_mutant(session: Session, nb, exercise: conventions.Exercise, mutant: mutant_edits.Mutant) -> MutantResult:
    result = MutantResult(exercise.name, mutant.name, mutant.mistake, [])
    outcome = session.run_cell(mutant.code, keep=False)
    error = _error_of(outcome.outputs)
    if error:
        result.setup_error = error
        return result
    for test_index in exercise.test_indices:
        cell = nb.cells[test_index]
        error = _error_of(session.run_test_cell(cell.source, conventions.grade_id(cell)).outputs)
        if error:
            result.failed_cells.append(conventions.grade_id(cell))
            result.errors[conventions.grade_id(cell)] = error
    return result


def format_report(report: NotebookReport) -> list[str]:
    """The lines ``check`` prints for one notebook: time, failures, mutants (missed ones named)."""
    caught = sum(m.caught for m in report.mutants)
    budget = "within budget" if report.seconds <= report.budget_seconds else "OVER BUDGET"
    lines = [f"{report.assignment}: {report.seconds:.1f} s of its {report.budget_seconds:.0f} s budget ({budget}); "
             f"judged with mutants in {report.judge_seconds:.1f} s; "
             f"mutants caught {caught}/{len(report.mutants)}"
             + (f" ({100 * caught / len(report.mutants):.0f}%)" if report.mutants else "")]
    lines += [f"  fails in a kernel: {error}" for error in report.cell_errors.values()]
    lines += [f"  fails in the judge: {error}" for error in report.judge_errors.values()]
    for mutant in report.mutants:
        if not mutant.caught:
            lines.append(f"  MISSED {mutant.name}: {mutant.description}"
                         + (f" (the mutant cell itself raised {mutant.setup_error})" if mutant.setup_error else ""))
    return lines


def ok(report: NotebookReport) -> bool:
    return not report.cell_errors and not report.judge_errors and all(m.caught for m in report.mutants)


def main(names: list[str], *, with_mutants: bool = True) -> int:
    """Check the named assignments (all when none); 0 if every test passes and every mutant is caught."""
    known = {a.name: a for a in conventions.assignments()}
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"check: no assignment {', '.join(unknown)} in solutions/ (known: {', '.join(known)})")
        return 2
    failed = []
    for name in names or list(known):
        try:
            report = run_notebook(known[name], with_mutants=with_mutants)
        except mutant_edits.StaleMutant as stale:
            print(f"{name}: {stale}", flush=True)
            failed.append(name)
            continue
        print("\n".join(format_report(report)), flush=True)
        if not ok(report):
            failed.append(name)
    print(f"check: {'all passed' if not failed else 'problems in ' + ', '.join(failed)}")
    return 1 if failed else 0
