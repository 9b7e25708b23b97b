"""``python -m autograder demo``: build the student versions, then grade sample submissions.

Everything happens in a scratch copy of the course (a temporary folder): the demo never writes to
``notebooks/``, ``solutions/`` or anything else in the repository, only to its ``--out`` folder.
It grades one short assignment (``DEFAULT_ASSIGNMENT``) unless told others (``--assignment``) or
all (``--all``). The samples are made on the spot from the repository (nothing with answers is
bundled in the package): for every assignment demonstrated,

* ``alice_correct``  - every exercise answered with the solution's code;
* ``bob_partial``    - the solution, with one plausible mistake (a mutant from ``mutants/``)
  in every other exercise;
* ``carol_untouched`` - the student version as released, nothing filled in;
* ``dave_broken``    - a file that is not a notebook any more (truncated JSON);
* ``erin_crash``     - a notebook whose first answer kills its kernel (``os._exit``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import conventions, mutant_edits, submissions
from .build import build
from ..batch.grading import grade
from ..batch.report import format_table, self_grading_bundles, summary_warnings
from ..sandbox.limits import Limits
from ..sandbox.bubblewrap import bwrap_available
from .solution_source import load_solution

DEFAULT_ASSIGNMENT = "04_scaling"   # the shortest to grade: 3 exercises
CRASHING_ANSWER = "import os\nos._exit(3)  # a student's experiment that takes the kernel down\n"


def make_samples(folder: Path, assignments: list | None = None,
                 notebooks_dir: Path = conventions.NOTEBOOKS_DIR) -> Path:
    """The five sample students' submissions of ``assignments`` (default: all), made from the
    student versions in ``notebooks_dir``, under ``folder`` (replaced)."""
    if folder.exists():
        shutil.rmtree(folder)
    for assignment in assignments if assignments is not None else conventions.assignments():
        _samples_of(assignment, folder, notebooks_dir / assignment.name / assignment.source_path.name)
    return folder


def _samples_of(assignment, folder: Path, release: Path) -> None:
    name = assignment.source_path.name
    submissions.write(submissions.filled_in(assignment, release_path=release), folder / "alice_correct" / assignment.name / name)

    mistakes = {}
    source = load_solution(assignment)
    for index, (exercise, mutants) in enumerate(sorted(mutant_edits.assignment_mutants(assignment, source).items())):
        if index % 2 == 0:
            mistakes[exercise] = mutants[0].code
    if not mistakes:
        raise FileNotFoundError(f"no mutants for {assignment.name} under {conventions.MUTANTS_DIR}: the 'partly wrong' "
                                "sample would be all correct (the container must copy mutants/)")
    submissions.write(submissions.filled_in(assignment, mistakes, release_path=release),
                      folder / "bob_partial" / assignment.name / name)

    untouched = folder / "carol_untouched" / assignment.name / name
    untouched.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(release, untouched)

    broken = folder / "dave_broken" / assignment.name / name
    broken.parent.mkdir(parents=True, exist_ok=True)
    text = release.read_text(encoding="utf-8")
    broken.write_text(text[: len(text) // 2], encoding="utf-8")

    first_exercise = conventions.exercises(load_solution(assignment))[0].name
    crash = submissions.filled_in(assignment, {first_exercise: CRASHING_ANSWER}, release_path=release)
    submissions.write(crash, folder / "erin_crash" / assignment.name / name)


def selected_assignments(names: list[str] | None, every: bool = False) -> list:
    """The course's assignments the demo grades: all, the ones named (``ValueError`` for an unknown
    name, with the names there are), or ``DEFAULT_ASSIGNMENT``."""
    known = conventions.assignments()
    if every:
        return known
    wanted = [n.strip() for name in (names or [DEFAULT_ASSIGNMENT]) for n in name.split(",") if n.strip()]
    unknown = [name for name in wanted if name not in {a.name for a in known}]
    if unknown:
        raise ValueError(f"no assignment named {', '.join(unknown)}; there are: {', '.join(a.name for a in known)}")
    return [a for a in known if a.name in wanted]


def scratch_course(folder: Path, assignments: list) -> list:
    """Copy the assignments' solution folders into ``folder/solutions`` and build their student
    versions in ``folder/notebooks`` (the private edition: no bundles); the copies' assignments."""
    for assignment in assignments:
        shutil.copytree(assignment.source_path.parent, folder / "solutions" / assignment.name)
    build(folder / "solutions", folder / "notebooks", bundle_dir=folder / "selfgrade", self_grading=False)
    return conventions.assignments(folder / "solutions")


def run_demo(out_dir: Path, workers: int | None = None, assignments: list | None = None) -> int:
    """Build ``assignments`` (default: ``DEFAULT_ASSIGNMENT``) in a scratch copy of the course, grade
    the five sample students' submissions of them into ``out_dir``, print the table."""
    out_dir = Path(out_dir).resolve()
    assignments = assignments if assignments is not None else selected_assignments(None)
    with tempfile.TemporaryDirectory(prefix="course-demo-") as scratch:
        print(f"1/3 Building {', '.join(a.name for a in assignments)} in a scratch copy of the course "
              f"(notebooks/ is not touched) ...")
        copies = scratch_course(Path(scratch), assignments)
        samples = make_samples(out_dir / "submissions", copies, Path(scratch) / "notebooks")
        print(f"2/3 Sample submissions written to {samples}")
        for path in sorted(p for p in samples.iterdir()):
            print(f"    {path.name}")
        rows = _grade_samples(samples, out_dir / "results", workers, Path(scratch) / "solutions")
    return _print_results(rows, out_dir / "results")


def _grade_samples(samples: Path, results_dir: Path, workers: int | None, solutions_dir: Path) -> list:
    if results_dir.exists():
        shutil.rmtree(results_dir)
    workers = workers or min(2, os.cpu_count() or 1)
    print(f"3/3 Grading with {workers} worker(s) ...")
    # The samples are made here from the course's own files, so grading them without bubblewrap is safe.
    sandbox = "bwrap" if bwrap_available() else "none"
    if sandbox == "none":
        print("    (bubblewrap is not available: the demo's own samples are graded without the sandbox)")
    return grade(samples, results_dir, workers=workers, solutions_dir=solutions_dir,
                 limits=Limits(cell_timeout_s=120, notebook_timeout_s=600, sandbox=sandbox))


def _print_results(rows: list, results_dir: Path) -> int:
    sandbox = "bwrap" if bwrap_available() else "none"
    print()
    print(format_table(rows))
    print()
    print(f"Grades (CSV):   {results_dir / 'grades.csv'}")
    print(f"Feedback HTML:  {results_dir / 'feedback'}/<student_id>/<assignment>/<notebook>.html")
    print(f"Gradebook:      {results_dir / 'gradebook.db'} (nbgrader sqlite)")
    # The demo grades its own samples: the public edition's bundles (what `grade` refuses without
    # --allow-self-grading-bundles) and --sandbox none are allowed here, and said.
    for line in summary_warnings(Limits(sandbox=sandbox), self_grading_bundles()):
        print(f"\n{line}")
    return 0


if __name__ == "__main__":
    sys.exit(run_demo(Path("grading/demo")))
