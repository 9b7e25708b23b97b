"""What each named mistake looks like to the judge: every mutant of an exercise run once against the
solution notebook, through the judge (as ``check`` does), and the message of each test cell it fails.

The class report (``class_report.py``) labels a group of students' failures with a mutant's mistake
when their messages match. Running the mutants costs a judge session per assignment, so the result is
cached in ``OUT/report_cache/mutants-<assignment>.json`` under a fingerprint of the solution notebook,
the mutants' file and the grader's version: a second report of the same class runs nothing.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ..course import contracts, conventions, mutant_edits
from ..course.solution_source import load_solution

CACHE_DIR = "report_cache"


@dataclass
class MutantFailure:
    """One mutant's failures: the exercise, the mistake (its `mistake` text), and ``(grade_id, message)``
    for each test cell it fails, in notebook order."""

    exercise: str
    mutant: str
    mistake: str
    failures: list[tuple[str, str]]


def error_message(outputs) -> str | None:
    """The message of the first error among a cell's outputs (``ename: evalue``), or None if it passed."""
    for output in outputs or []:
        if output.get("output_type") == "error":
            return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
    return None


def mutant_failures(assignment: conventions.Assignment, mutants_dir: Path, out_dir: Path,
                    exercises: set[str] | None = None) -> list[MutantFailure]:
    """The failures of every mutant of ``assignment`` (only of ``exercises``, when given), cached in ``out_dir``."""
    path = mutant_edits.mutants_file(mutants_dir, assignment.name)
    nb = load_solution(assignment)
    mutants = mutant_edits.mutants_by_exercise(nb, path, exercises, skip_stale=True)
    if not mutants:
        return []
    key = _fingerprint(assignment.source_path, path, sorted(mutants))
    cache = Path(out_dir) / CACHE_DIR / f"mutants-{assignment.name}.json"
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if cached.get("fingerprint") == key:
            return [MutantFailure(m["exercise"], m["mutant"], m["mistake"], [tuple(f) for f in m["failures"]])
                    for m in cached["mutants"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass   # no cache, or a damaged one: run them
    found = _run_mutants(nb, mutants, contracts.for_judge(assignment))
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"fingerprint": key, "mutants": [asdict(m) for m in found]}, indent=1), encoding="utf-8")
    return found


def _fingerprint(source_path: Path, mutants_path: Path, exercises: list[str]) -> str:
    from .planning import GRADER_VERSION

    digest = hashlib.sha256(GRADER_VERSION.encode() + b"\0" + source_path.read_bytes())
    digest.update(b"\0" + mutants_path.read_bytes() + b"\0" + " ".join(exercises).encode())
    return digest.hexdigest()


def _run_mutants(nb, mutants: dict[str, list[mutant_edits.Mutant]], declared: dict) -> list[MutantFailure]:
    """Walk the solution notebook in a judge session; at each exercise with mutants, swap each in and
    judge the exercise's test cells, then put the solution back (``check``'s walk, keeping the messages)."""
    from ..judge.session import Session
    from ..sandbox.limits import Limits
    from ..course.setup_cell import SETUP_GRADE_ID

    by_first_test = {min(e.test_indices): e for e in conventions.exercises(nb) if e.test_indices}
    limits = Limits(cell_timeout_s=300, notebook_timeout_s=3600, memory_mb=8192, sandbox="none")
    found: list[MutantFailure] = []
    with tempfile.TemporaryDirectory(prefix="course-report-") as tmp:
        (Path(tmp) / "work").mkdir()
        session = Session(Path(tmp) / "work", limits, [], conventions.exercise_names(nb), Path(tmp) / "runner.log")
        session.declare_contracts(declared)
        session.start()
        try:
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                exercise = by_first_test.get(index)
                if exercise is not None and mutants.get(exercise.name):
                    found += [_try(session, nb, exercise, mutant) for mutant in mutants[exercise.name]]
                    session.run_cell(conventions.strip_solution_markers(nb.cells[exercise.solution_index].source), keep=False)
                if conventions.is_graded_cell(cell):
                    session.run_test_cell(cell.source, conventions.grade_id(cell))
                elif conventions.grade_id(cell) == SETUP_GRADE_ID or conventions.is_solution_cell(cell):
                    session.run_cell(conventions.strip_solution_markers(cell.source))
        finally:
            session.stop()
    return found


def _try(session, nb, exercise: conventions.Exercise, mutant: mutant_edits.Mutant) -> MutantFailure:
    result = MutantFailure(exercise.name, mutant.name, mutant.mistake, [])
    if error_message(session.run_cell(mutant.code, keep=False).outputs):
        return result   # a broken mutant: it labels nothing
    for test_index in sorted(exercise.test_indices):
        cell = nb.cells[test_index]
        message = error_message(session.run_test_cell(cell.source, conventions.grade_id(cell)).outputs)
        if message is not None:
            result.failures.append((conventions.grade_id(cell), message))
    return result
